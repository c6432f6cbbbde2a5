"""Messages held for a digest or past quiet hours: once due, one message per person and channel.

Beat runs `send_held_notifications` every NOTIFY_HELD_CHECK_S (it first dispatches the alert events whose
hand-off was lost, monitoring/notify/from_events.py). A group is claimed with the same
compare-and-set as a single delivery (processed is set under a row lock that others skip), so two
workers never send it twice; a transient failure releases the claim and holds the group again after a
backoff. A digest channel whose period has closed also lists its person's underused GPUs
(monitoring/notify/underused.py), and goes out for them alone when no alert update is held. An email
or webhook message that waited for its run's other alerts to join it (monitoring/notify/grouping.py)
goes on its own once its window has closed; its retries are Celery's, like any immediate delivery.
"""

from collections import defaultdict
from datetime import datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from monitoring.notify import digests, underused
from monitoring.notify.choices import Delivery, NotificationStatus, TransportKind
from monitoring.notify.deliver import backoff, deliver, deliver_notification
from monitoring.notify.from_events import dispatch_unclaimed
from monitoring.notify.models import Notification, NotificationPreference
from monitoring.notify.timing import zone_of
from monitoring.notify.transports import (
    TransportError,
    destination_kinds,
    destination_kwargs,
    destination_model,
    transport_for,
)

Channel = tuple[int, str, int | None]  # person, transport, destination (a webhook's id)


def due_groups(now: datetime) -> dict[Channel, list[int]]:
    """The held notifications that are due, per channel, and the digest channels owed an underused list."""
    due = Notification.objects.filter(processed=None, status=NotificationStatus.PENDING, deliver_after__lte=now)
    groups = defaultdict(list)
    for pk, user, transport, *destinations in due.order_by("created", "id").values_list(
        "pk", "user", "transport", *destination_kinds()
    ):
        groups[(user, transport, next((d for d in destinations if d is not None), None))].append(pk)
    for channel in underused.channels_owed(now):
        groups.setdefault(channel, [])
    return dict(groups)


def claim(pks: list[int], now: datetime) -> list[Notification]:
    with transaction.atomic():
        free = Notification.objects.filter(pk__in=pks, processed=None).select_for_update(skip_locked=True)
        mine = list(free.values_list("pk", flat=True))
        Notification.objects.filter(pk__in=mine).update(processed=now)
    rows = Notification.objects.filter(pk__in=mine).select_related("event__alert", "user", *destination_kinds())
    return list(rows.order_by("created", "id"))


def why_held(prefs: NotificationPreference, transport: str) -> str:
    delivery = prefs.delivery_of(transport)
    return "held during your quiet hours" if delivery == Delivery.IMMEDIATELY else Delivery(delivery).label.lower()


def stand_in(channel: Channel) -> Notification:
    """An unsaved notification naming the channel, for a transport sending underused GPUs alone."""
    user_id, transport, destination_id = channel
    destination = destination_model(transport).objects.get(pk=destination_id) if destination_id else None
    person = get_user_model().objects.get(pk=user_id)
    return Notification(user=person, transport=transport, **destination_kwargs(transport, destination))


def send_group(channel: Channel, pks: list[int], now: datetime) -> str:
    prefs = NotificationPreference.objects.filter(user_id=channel[0]).first() or NotificationPreference()
    with transaction.atomic():
        notes = claim(pks, now)
        told = underused.claim(channel, prefs, now)
    found = told.processes if told else []
    if not notes and not found:
        return "claimed elsewhere" if told is None else "nothing to tell"
    transport = transport_for(notes[0] if notes else stand_in(channel))
    why = why_held(prefs, channel[1])
    try:
        with timezone.override(zone_of(prefs)):  # the message's times in the person's zone, named
            if len(notes) == 1 and not found:
                transport.notify(notes[0].event.alert)
            else:
                period = (told.since, told.until) if told else (None, None)
                transport.notify_digest(digests.build(notes, found, why, *period))
    except TransportError as exc:
        underused.failed(told, exc)
        return failed(notes, exc, now) if notes else NotificationStatus.FAILED
    except Exception as exc:  # a bug in a transport: record it, never leave the rows claimed and silent
        error = TransportError(f"{type(exc).__name__}: {exc}", permanent=True)
        underused.failed(told, error)
        if notes:
            failed(notes, error, now)
        raise
    underused.sent(told)
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


def send_grouped(now: datetime) -> int:
    """First delivery of each message whose group window has closed; the number sent."""
    closed = Notification.objects.filter(
        processed=None, status=NotificationStatus.PENDING, deliver_after=None, group_until__lte=now, attempts=0
    ).exclude(transport=TransportKind.IN_APP)  # in-app ones were delivered at once; they only took joiners
    sent = 0
    for pk in closed.order_by("created", "id").values_list("pk", flat=True):
        outcome = deliver(pk)
        if outcome.retry_in is not None:
            deliver_notification.apply_async((pk,), countdown=outcome.retry_in)
        sent += outcome.status == NotificationStatus.SENT
    return sent


def send_held(now: datetime | None = None) -> int:
    """Send every group that is due and every message whose group has closed; the number of messages sent."""
    now = now or timezone.now()
    held = sum(send_group(channel, pks, now) == NotificationStatus.SENT for channel, pks in due_groups(now).items())
    return held + send_grouped(now)


@shared_task(name="monitoring.tasks.send_held_notifications", ignore_result=True)
def send_held_notifications() -> int:
    """Beat's look at what is owed: events whose hand-off was lost first, then every held message due."""
    dispatch_unclaimed(timezone.now())
    return send_held()
