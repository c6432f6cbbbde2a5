"""Choices of the telemetry app's own models (each app owns its choices)."""

from django.db import models


class SecurityEventKind(models.TextChoices):
    FOREIGN_GPU = "foreign_gpu", "Hello listed another node's GPU"
    GPU_MOVED = "gpu_moved", "GPU moved by an admin"
