"""Alert choices with labels and colours, beside the alert models."""

from django.db import models


class AlertKind(models.TextChoices):
    IDLE_PROCESS = "idle_process", "Idle process"
    BOOKING_IDLE = "booking_idle", "Booked GPU idle"
    SQUATTING = "squatting", "Process on another's booking"
    RUN_OVERDUE = "run_overdue", "Run past its expected time"
    GPU_TEMPERATURE = "gpu_temperature", "GPU temperature"
    GPU_THROTTLING = "gpu_throttling", "GPU throttling"
    GPU_ECC = "gpu_ecc", "ECC errors"
    BUDGET = "budget", "Budget"
    BOOKING_NOTICE = "booking_notice", "Booking changed"


def alert_kinds() -> list[tuple[str, str]]:
    """AlertKind's choices for the alert's field, read when needed so that a new kind needs no migration."""
    return AlertKind.choices


class AlertSeverity(models.TextChoices):
    INFO = "info", "Info"
    WARNING = "warning", "Warning"
    CRITICAL = "critical", "Critical"

    @property
    def colour(self) -> str:
        return ALERT_SEVERITY_COLOURS[self]

    @property
    def rank(self) -> int:
        return list(AlertSeverity).index(self)


ALERT_SEVERITY_COLOURS = {
    AlertSeverity.INFO: "blue",
    AlertSeverity.WARNING: "amber",
    AlertSeverity.CRITICAL: "red",
}


class AlertStatus(models.TextChoices):
    OPEN = "open", "Open"
    ACKNOWLEDGED = "acknowledged", "Acknowledged"
    RESOLVED = "resolved", "Resolved"

    @property
    def colour(self) -> str:
        return ALERT_STATUS_COLOURS[self]


ALERT_STATUS_COLOURS = {
    AlertStatus.OPEN: "red",
    AlertStatus.ACKNOWLEDGED: "amber",
    AlertStatus.RESOLVED: "green",
}


class AlertEventKind(models.TextChoices):
    OPENED = "opened", "Opened"
    WARNED = "warned", "Warned again"
    ESCALATED = "escalated", "Escalated to admins"
    ACKNOWLEDGED = "acknowledged", "Acknowledged"
    SNOOZED = "snoozed", "Snoozed"
    RECLAIM_REQUESTED = "reclaim_requested", "Reclaim requested"
    RECLAIMED = "reclaimed", "Process ended by reclaim"
    RECLAIM_FAILED = "reclaim_failed", "Reclaim did not end the process"
    RESOLVED = "resolved", "Resolved"

    @property
    def notifies(self) -> bool:
        """Events people are told about; acknowledging or snoozing is their own doing."""
        return self not in (AlertEventKind.ACKNOWLEDGED, AlertEventKind.SNOOZED, AlertEventKind.RECLAIM_REQUESTED)


class ReclaimStatus(models.TextChoices):
    REQUESTED = "requested", "Requested"
    TERMINATED = "terminated", "Ended by SIGTERM"
    KILLED = "killed", "Ended by SIGKILL"
    GONE = "gone", "Already gone"
    MISMATCH = "mismatch", "Refused: another process has that pid"
    FAILED = "failed", "Failed"

    @property
    def colour(self) -> str:
        return RECLAIM_STATUS_COLOURS[self]


RECLAIM_STATUS_COLOURS = {
    ReclaimStatus.REQUESTED: "amber",
    ReclaimStatus.TERMINATED: "green",
    ReclaimStatus.KILLED: "green",
    ReclaimStatus.GONE: "grey",
    ReclaimStatus.MISMATCH: "grey",
    ReclaimStatus.FAILED: "red",
}


class IdleStretchKind(models.TextChoices):
    """Whose idle stretch: a forgotten process (alerted) or an underused one (reported, never alerted)."""

    FORGOTTEN = "forgotten", "Forgotten"
    UNDERUSED = "underused", "Underused"

    @property
    def colour(self) -> str:
        return IDLE_STRETCH_COLOURS[self]


IDLE_STRETCH_COLOURS = {IdleStretchKind.FORGOTTEN: "red", IdleStretchKind.UNDERUSED: "amber"}
