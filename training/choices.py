"""Run and sweep choices with labels and colours, beside the training models."""

from django.db import models


class RunStatus(models.TextChoices):
    SCHEDULED = "scheduled", "Scheduled"
    QUEUED = "queued", "Queued"
    STARTING = "starting", "Starting"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    LOST = "lost", "Lost"

    @property
    def colour(self) -> str:
        return RUN_STATUS_COLOURS[self]

    @classmethod
    def active(cls) -> tuple[str, ...]:
        """States in which a run holds its GPUs."""
        return (cls.STARTING, cls.RUNNING)

    @classmethod
    def unfinished(cls) -> tuple[str, ...]:
        return (cls.SCHEDULED, cls.QUEUED, cls.STARTING, cls.RUNNING)

    @classmethod
    def finished(cls) -> tuple[str, ...]:
        return (cls.SUCCEEDED, cls.FAILED, cls.CANCELLED, cls.LOST)


RUN_STATUS_COLOURS = {
    RunStatus.SCHEDULED: "grey",
    RunStatus.QUEUED: "amber",
    RunStatus.STARTING: "amber",
    RunStatus.RUNNING: "blue",
    RunStatus.SUCCEEDED: "green",
    RunStatus.FAILED: "red",
    RunStatus.CANCELLED: "grey",
    RunStatus.LOST: "red",
}


class RunNodeStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    STARTING = "starting", "Starting"
    RUNNING = "running", "Running"
    EXITED = "exited", "Exited"
    LOST = "lost", "Lost"


class SweepMode(models.TextChoices):
    GRID = "grid", "Grid search"
    RANDOM = "random", "Random search"


class SweepMetric(models.TextChoices):
    ACCURACY = "accuracy", "Held-out accuracy (higher is better)"
    LOSS = "loss", "Held-out loss (lower is better)"


class ArtifactKind(models.TextChoices):
    MODEL = "model", "Final model"
    METRICS = "metrics", "Metrics per step (CSV)"
