"""Choices of the ingest's own records, beside its models."""

from django.db import models


class SecurityEventKind(models.TextChoices):
    FOREIGN_GPU = "foreign_gpu", "Hello listed another node's GPU"
    GPU_MOVED = "gpu_moved", "GPU moved by an admin"
