"""A request to end one GPU process: who asked, what the process was, and how it ended."""

from django.conf import settings
from django.db import models

from inventory.models import GPU, Node
from monitoring.alerts.models import EndedProcess


class ProcessStop(EndedProcess):
    """One process a researcher (their own) or an admin (any) asked the node worker to end."""

    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="process_stops"
    )
    node = models.ForeignKey(Node, on_delete=models.SET_NULL, null=True, related_name="process_stops")
    gpu = models.ForeignKey(GPU, on_delete=models.SET_NULL, null=True, related_name="process_stops")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    run = models.ForeignKey(
        "training.Run",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The fleet run the process belonged to: the whole run was asked to stop, as a cancel does.",
    )
    grace_s = models.FloatField(help_text="Seconds between SIGTERM and SIGKILL: the grace of a run's cancel.")

    class Meta(EndedProcess.Meta):
        indexes = [models.Index(fields=["gpu", "pid", "status"], name="processstop_gpu_pid_status")]

    def __str__(self) -> str:
        return f"End pid {self.pid} ({self.os_user}) on {self.node}"
