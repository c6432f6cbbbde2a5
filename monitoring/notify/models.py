"""Notifications of alert events and each person's delivery preferences.

A transport's destinations (a person's webhooks) are its own models, in its folder; the registry imports
them, and each gets its field on Notification and UnderusedReported (monitoring/notify/transports).
"""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from monitoring.alerts.choices import AlertSeverity
from monitoring.alerts.models import AlertEvent
from monitoring.notify import transports
from monitoring.notify.choices import Delivery, NotificationStatus, TransportKind


def default_zone_name() -> str:
    return settings.TIME_ZONE


def destination_fields(related_name: str) -> dict[str, models.ForeignKey]:
    """One field per transport with destinations, named after its kind, set only on that kind's rows."""
    return {
        kind: models.ForeignKey(
            transports.destination_model(kind),
            on_delete=models.CASCADE,
            null=True,
            blank=True,
            related_name=related_name,
        )
        for kind in transports.destination_kinds()
    }


def destination_matches_transport(prefix: str) -> list[models.CheckConstraint]:
    """A row of a kind with destinations names one of them; no other row names any."""
    return [
        models.CheckConstraint(
            condition=Q(transport=kind, **{f"{kind}__isnull": False})
            | (~Q(transport=kind) & Q(**{f"{kind}__isnull": True})),
            name=f"{prefix}_{kind}_matches_transport",
        )
        for kind in transports.destination_kinds()
    ]


class NotificationPreference(models.Model):
    """How one person wants to hear about alerts (in-app notifications always arrive)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="alert_preferences")
    email = models.BooleanField(default=True, help_text="Send alerts by email.")
    email_min_severity = models.CharField(
        max_length=16,
        choices=AlertSeverity.choices,
        default=AlertSeverity.WARNING,
        help_text="Only email alerts of at least this severity.",
    )
    webhooks = models.BooleanField(default=True, help_text="Send alerts to my active webhooks.")
    resolved = models.BooleanField(default=False, help_text="Also email and post when an alert resolves.")
    email_delivery = models.CharField(
        max_length=16, choices=Delivery.choices, default=Delivery.IMMEDIATELY, help_text="When email goes out."
    )
    webhook_delivery = models.CharField(
        max_length=16, choices=Delivery.choices, default=Delivery.IMMEDIATELY, help_text="When webhooks are posted."
    )
    quiet_start = models.TimeField(null=True, blank=True, help_text="No email or webhook from this time…")
    quiet_end = models.TimeField(null=True, blank=True, help_text="…until this time (in your time zone).")
    time_zone = models.CharField(
        max_length=64, default=default_zone_name, help_text="Your zone, for quiet hours and digests."
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(quiet_start__isnull=True, quiet_end__isnull=True)
                | (Q(quiet_start__isnull=False, quiet_end__isnull=False) & ~Q(quiet_start=F("quiet_end"))),
                name="preference_quiet_hours_whole",
                violation_error_message="Give both ends of the quiet hours, and different times.",
            )
        ]

    def __str__(self) -> str:
        return f"Alert preferences of {self.user}"

    def delivery_of(self, transport: str) -> str:
        """When this person's messages through `transport` go out; a transport without the choice sends at once."""
        field = transports.transport_class(transport).delivery_field
        return getattr(self, field) if field else Delivery.IMMEDIATELY


class Notification(models.Model):
    """One alert event told to one person through one transport; a worker claims it exactly once."""

    event = models.ForeignKey(AlertEvent, on_delete=models.CASCADE, related_name="notifications")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    transport = models.CharField(max_length=16, choices=transports.choices)
    locals().update(destination_fields("notifications"))
    status = models.CharField(max_length=16, choices=NotificationStatus.choices, default=NotificationStatus.PENDING)
    created = models.DateTimeField(default=timezone.now)
    processed = models.DateTimeField(null=True, blank=True, help_text="When a worker claimed it.")
    sent_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    read_at = models.DateTimeField(null=True, blank=True)
    dedupe_key = models.CharField(
        max_length=250,
        null=True,
        blank=True,
        help_text="Names the state change for this person and channel (monitoring/notify/grouping.py).",
    )
    deliver_after = models.DateTimeField(
        null=True, blank=True, help_text="Held for a digest or past quiet hours until then (monitoring/notify/held.py)."
    )
    group_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Alerts of the same run and change join it until then; its email or webhook message waits for it.",
    )
    also = ArrayField(
        models.IntegerField(),
        default=list,
        blank=True,
        help_text="The other alerts that changed with it (the same run or node, at the same time).",
    )

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["dedupe_key"], name="notification_once_per_change"),
            models.UniqueConstraint(
                fields=["event", "user", "transport", *transports.destination_kinds()],
                nulls_distinct=False,
                name="notification_once_per_event_person_channel",
            ),
            *destination_matches_transport("notification"),
        ]
        indexes = [
            models.Index(fields=["deliver_after"], condition=Q(processed__isnull=True), name="notification_held"),
            models.Index(
                fields=["user"],
                condition=Q(transport=TransportKind.IN_APP, read_at__isnull=True),
                name="notification_unread",
            ),
            models.Index(
                fields=["group_until"],
                condition=Q(processed__isnull=True, deliver_after__isnull=True, group_until__isnull=False),
                name="notification_grouping",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_transport_display()} to {self.user}: {self.event}"

    @property
    def status_colour(self) -> str:
        return NotificationStatus(self.status).colour

    @property
    def destination(self):
        """What it was sent to (one of a person's webhooks), for a transport with destinations; else None."""
        return getattr(self, self.transport) if self.transport in transports.destination_kinds() else None


class UnderusedReported(models.Model):
    """How far one person's digest channel has been told about their underused GPUs (monitoring/notify/underused.py)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="underused_reported")
    transport = models.CharField(max_length=16, choices=transports.choices)
    locals().update(destination_fields("underused_reported"))
    until = models.DateTimeField(null=True, blank=True, help_text="The end of the last period its digest listed.")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Failed tries of the current period's digest.")
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "transport", *transports.destination_kinds()],
                nulls_distinct=False,
                name="underused_told_once_per_channel",
            )
        ]

    def __str__(self) -> str:
        return f"Underused GPUs told to {self.user} by {self.transport} until {self.until}"
