"""Messages held for a digest or past quiet hours: once due, one message per person and channel.

Beat runs `send_held_notifications` every NOTIFY_HELD_CHECK_S. A group is claimed with the same
compare-and-set as a single delivery (processed is set under a row lock that others skip), so two
workers never send it twice; a transient failure releases the claim and holds the group again after a
backoff.
"""

from collections import defaultdict
from datetime import datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from monitoring.notify.choices import Delivery, NotificationStatus
from monitoring.notify.deliver import backoff
from monitoring.notify.models import Notification, NotificationPreference
from monitoring.notify.timing import zone_of
from monitoring.notify.transports import TransportError, transport_for


def due_groups(now: datetime) -> list[list[int]]:
    due = Notification.objects.filter(processed=None, status=NotificationStatus.PENDING, deliver_after__lte=now)
    groups = defaultdict(list)
    for pk, user, transport, hook in due.order_by("created", "id").values_list("pk", "user", "transport", "webhook"):
        groups[(user, transport, hook)].append(pk)
    return list(groups.values())


def claim(pks: list[int], now: datetime) -> list[Notification]:
    with transaction.atomic():
        free = Notification.objects.filter(pk__in=pks, processed=None).select_for_update(skip_locked=True)
        mine = list(free.values_list("pk", flat=True))
        Notification.objects.filter(pk__in=mine).update(processed=now)
    rows = Notification.objects.filter(pk__in=mine).select_related("event__alert", "user", "webhook")
    return list(rows.order_by("created", "id"))


def why_held(prefs: NotificationPreference, transport: str) -> str:
    delivery = prefs.delivery_of(transport)
    return "held during your quiet hours" if delivery == Delivery.IMMEDIATELY else Delivery(delivery).label.lower()


def send_group(pks: list[int], now: datetime) -> str:
    notes = claim(pks, now)
    if not notes:
        return "claimed elsewhere"
    prefs = NotificationPreference.objects.filter(user=notes[0].user).first() or NotificationPreference()
    transport = transport_for(notes[0])
    try:
        with timezone.override(zone_of(prefs)):  # the message's times in the person's zone, named
            if len(notes) == 1:
                transport.notify(notes[0].event.alert)
            else:
                transport.notify_digest(notes, why_held(prefs, notes[0].transport))
    except TransportError as exc:
        return failed(notes, exc, now)
    except Exception as exc:  # a bug in a transport: record it, never leave the rows claimed and silent
        failed(notes, TransportError(f"{type(exc).__name__}: {exc}", permanent=True), now)
        raise
    sent = Notification.objects.filter(pk__in=[n.pk for n in notes])
    sent.update(status=NotificationStatus.SENT, sent_at=now, error="", attempts=F("attempts") + 1)
    return NotificationStatus.SENT


def failed(notes: list[Notification], exc: TransportError, now: datetime) -> str:
    attempts = max(n.attempts for n in notes) + 1
    rows = Notification.objects.filter(pk__in=[n.pk for n in notes])
    error = f"attempt {attempts}: {exc.message}"
    if exc.permanent or attempts > settings.NOTIFY_MAX_RETRIES:
        rows.update(status=NotificationStatus.FAILED, error=error, attempts=attempts)
        return NotificationStatus.FAILED
    later = now + timedelta(seconds=backoff(attempts))
    rows.update(processed=None, deliver_after=later, error=error, attempts=attempts)
    return NotificationStatus.PENDING


def send_held(now: datetime | None = None) -> int:
    """Send every group that is due; the number of groups sent."""
    now = now or timezone.now()
    return sum(send_group(pks, now) == NotificationStatus.SENT for pks in due_groups(now))


@shared_task(name="monitoring.tasks.send_held_notifications", ignore_result=True)
def send_held_notifications() -> int:
    return send_held()
