"""The training app; its ready() connects the node worker's heartbeat and the artifact files' cleanup."""

from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "training"
    verbose_name = "Training runs"

    def ready(self) -> None:
        # Node workers report that they are alive (worker_presence: its worker_ready signal; elsewhere it stays
        # idle); a deleted artifact row deletes its file (artifacts: the run's deletion, retention).
        from training.node import worker_presence  # noqa: F401
        from training.run_files import artifacts  # noqa: F401
