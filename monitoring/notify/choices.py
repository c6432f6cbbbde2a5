"""Notification choices; the transport kinds come from the transport registry."""

from django.db import models

from monitoring.notify.transports import TRANSPORTS

TransportKind = models.TextChoices(
    "TransportKind", [(registered.constant, (kind, registered.label)) for kind, registered in TRANSPORTS.items()]
)


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


class Delivery(models.TextChoices):
    """When a person's email or webhook messages go out (in-app notifications always arrive at once)."""

    IMMEDIATELY = "immediately", "Immediately"
    HOURLY = "hourly", "Hourly digest"
    DAILY = "daily", "Daily digest"
