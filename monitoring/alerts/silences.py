"""Admin silences: while one matches an alert, the alert's changes notify nobody (it still opens and shows)."""

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from monitoring.alerts.models import Alert, Silence

MAX_DURATION = timedelta(days=30)
MIN_DURATION = timedelta(minutes=1)


class SilenceError(Exception):
    """A silence that cannot be made or changed; the message says why."""


def active(now: datetime | None = None) -> QuerySet:
    now = now or timezone.now()
    return Silence.objects.filter(starts_at__lte=now, ends_at__gt=now).select_related("node", "user", "created_by")


def silencing(alert: Alert, at: datetime | None = None) -> Silence | None:
    """The active silence that matches this alert at that moment, if any."""
    return next((s for s in active(at) if s.matches(alert)), None)


def silenced_ids(alerts, now: datetime | None = None) -> dict[int, Silence]:
    """For a page of alerts: alert id → the silence muting it."""
    found = list(active(now))
    return {a.pk: s for a in alerts for s in found if s.matches(a)}


def create(*, by, duration: timedelta, reason: str, node=None, user=None, kind: str = "") -> Silence:
    if not (node or user or kind):
        raise SilenceError("Silence by node, user or rule (at least one).")
    if not MIN_DURATION <= duration <= MAX_DURATION:
        raise SilenceError("Silence for between 1 minute and 30 days.")
    now = timezone.now()
    return Silence.objects.create(
        node=node, user=user, kind=kind, starts_at=now, ends_at=now + duration, reason=reason, created_by=by
    )


@transaction.atomic
def expire(silence: Silence) -> Silence:
    """End it now (a silence that has ended already stays as it was)."""
    silence = Silence.objects.select_for_update().get(pk=silence.pk)
    now = timezone.now()
    if silence.ends_at > now:
        silence.ends_at = max(now, silence.starts_at)
        silence.save(update_fields=["ends_at"])
    return silence
