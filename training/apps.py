from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "training"
    verbose_name = "Training runs"

    def ready(self) -> None:
        # Node workers report that they are alive (its worker_ready signal); elsewhere it stays idle.
        from training import presence  # noqa: F401
