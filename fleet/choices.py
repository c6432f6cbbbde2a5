"""Choices with labels and colours, so templates never hard-code a colour."""

from django.db import models


class NodeStatus(models.TextChoices):
    ONLINE = "online", "Online"
    OFFLINE = "offline", "Offline"
    DRAINING = "draining", "Draining"

    @property
    def colour(self) -> str:
        return NODE_STATUS_COLOURS[self]


NODE_STATUS_COLOURS = {
    NodeStatus.ONLINE: "green",
    NodeStatus.OFFLINE: "grey",
    NodeStatus.DRAINING: "amber",
}


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


class TransportKind(models.TextChoices):
    IN_APP = "inapp", "In-app"
    EMAIL = "email", "Email"
    WEBHOOK = "webhook", "Webhook"


class NotificationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"

    @property
    def colour(self) -> str:
        return NOTIFICATION_STATUS_COLOURS[self]


NOTIFICATION_STATUS_COLOURS = {
    NotificationStatus.PENDING: "amber",
    NotificationStatus.SENT: "green",
    NotificationStatus.FAILED: "red",
}


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


class RunStatus(models.TextChoices):
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
        return (cls.QUEUED, cls.STARTING, cls.RUNNING)

    @classmethod
    def finished(cls) -> tuple[str, ...]:
        return (cls.SUCCEEDED, cls.FAILED, cls.CANCELLED, cls.LOST)


RUN_STATUS_COLOURS = {
    RunStatus.QUEUED: "amber",
    RunStatus.STARTING: "amber",
    RunStatus.RUNNING: "blue",
    RunStatus.SUCCEEDED: "green",
    RunStatus.FAILED: "red",
    RunStatus.CANCELLED: "grey",
    RunStatus.LOST: "red",
}


class RunStrategy(models.TextChoices):
    SINGLE = "single", "Single process"
    DDP = "ddp", "DDP (torchrun)"
    HOGWILD = "hogwild", "Hogwild"


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


class ReservationStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    CANCELLED = "cancelled", "Cancelled"
    RELEASED = "released", "Released (no-show)"
    PREEMPTED = "preempted", "Preempted"
    ENDED = "ended", "Ended"

    @property
    def colour(self) -> str:
        return RESERVATION_STATUS_COLOURS[self]


RESERVATION_STATUS_COLOURS = {
    ReservationStatus.ACTIVE: "green",
    ReservationStatus.CANCELLED: "grey",
    ReservationStatus.RELEASED: "amber",
    ReservationStatus.PREEMPTED: "red",
    ReservationStatus.ENDED: "grey",
}


class ReservationEventKind(models.TextChoices):
    PREEMPTED = "preempted", "Preempted by an admin"
    RELEASED = "released", "Released: not used in time"
    SQUATTING = "squatting", "Someone else is using a booked GPU"
    CHANGED_BY_ADMIN = "changed_by_admin", "Changed by an admin"

    @property
    def colour(self) -> str:
        return RESERVATION_EVENT_COLOURS[self]


RESERVATION_EVENT_COLOURS = {
    ReservationEventKind.PREEMPTED: "red",
    ReservationEventKind.RELEASED: "amber",
    ReservationEventKind.SQUATTING: "red",
    ReservationEventKind.CHANGED_BY_ADMIN: "amber",
}


class UtilizationBand(models.TextChoices):
    """How busy a GPU is, from its utilization; the tile colour on the Fleet page."""

    UNKNOWN = "unknown", "N/A"
    IDLE = "idle", "Idle"
    LIGHT = "light", "Light"
    BUSY = "busy", "Busy"
    FULL = "full", "Full"

    @property
    def colour(self) -> str:
        return f"util-{self.value}"

    @classmethod
    def of(cls, util_gpu: float | None) -> "UtilizationBand":
        if util_gpu is None:
            return cls.UNKNOWN
        for floor, band in UTILIZATION_BAND_FLOORS:
            if util_gpu >= floor:
                return band
        return cls.IDLE


# The lowest utilization (%) of each band, busiest first; below 5 % a GPU counts as idle.
UTILIZATION_BAND_FLOORS = [
    (80, UtilizationBand.FULL),
    (40, UtilizationBand.BUSY),
    (5, UtilizationBand.LIGHT),
]


class ThrottleReason(models.TextChoices):
    """Why a GPU runs below its maximum clocks, grouped from NVML's clocks-event bits."""

    THERMAL = "thermal", "Thermal throttling"
    POWER = "power", "Power capping"
    HW_SLOWDOWN = "hw_slowdown", "Hardware slowdown"

    @property
    def colour(self) -> str:
        return THROTTLE_COLOURS[self]


THROTTLE_COLOURS = {
    ThrottleReason.THERMAL: "red",
    ThrottleReason.POWER: "amber",
    ThrottleReason.HW_SLOWDOWN: "red",
}
