"""Turn alert events into notifications: who hears about it, through which transports, per their preferences.

The AlertEvent table is the outbox. Right after the commit that stored events, alerts send
`events_recorded` (monitoring/alerts/outbox.py) and `hand_off` queues their dispatch on the central
worker; `dispatch_unclaimed` picks up, on held's periodic look, whatever such a hand-off lost. Every way in
claims each event once, so two workers never tell anyone twice.
"""

from datetime import datetime, timedelta

from celery import shared_task
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.dispatch import receiver
from django.utils import timezone

from monitoring.alerts import silences
from monitoring.alerts.choices import AlertEventKind, AlertKind, AlertStatus
from monitoring.alerts.models import AlertEvent
from monitoring.alerts.outbox import events_recorded
from monitoring.notify import grouping, timing
from monitoring.notify.choices import TransportKind
from monitoring.notify.deliver import deliver, deliver_notification
from monitoring.notify.models import Notification, NotificationPreference
from monitoring.notify.transports import transport_classes


def audience(event: AlertEvent) -> list:
    """The owner; a project's members for project alerts; admins for escalations and alerts nobody owns."""
    alert = event.alert
    User = get_user_model()
    staff = list(User.objects.filter(is_staff=True, is_active=True))
    if event.kind == AlertEventKind.ESCALATED:
        return staff
    if alert.owner_id:
        return [alert.owner] if alert.owner.is_active else staff
    if alert.project_id:
        return list(alert.project.members.filter(is_active=True)) or staff
    return staff


def channels(event: AlertEvent, prefs: NotificationPreference) -> list[tuple[str, object]]:
    """(transport, destination) pairs for one person, each transport as they chose: in-app always; nothing
    else for a resolution they did not ask about or an alert they snoozed (an escalation still reaches them)."""
    muted = event.kind == AlertEventKind.RESOLVED and not prefs.resolved
    muted = muted or (event.alert.is_snoozed() and event.kind != AlertEventKind.ESCALATED)
    found = []
    for kind, transport in transport_classes():
        if (transport.always or not muted) and transport.wants(event, prefs):
            found += [(kind, destination) for destination in transport.reaches(prefs)]
    return found


def is_delivered_notice(event: AlertEvent) -> bool:
    """A notice resolves as soon as it opens; telling people it resolved would be noise."""
    return event.kind == AlertEventKind.RESOLVED and event.alert.kind == AlertKind.BOOKING_NOTICE


def is_reopening(event: AlertEvent) -> bool:
    """The alert came back within ALERT_REOPEN_WITHIN_H: its event says "Idle again (3rd time in 24 h)"."""
    return event.kind == AlertEventKind.OPENED and event.old_status == AlertStatus.RESOLVED


def preferences_of(user) -> NotificationPreference:
    prefs = NotificationPreference.objects.filter(user=user).first() or NotificationPreference(user=user)
    prefs.user = user  # the transports ask prefs.user: the person at hand, not a second query for them
    return prefs


def wanted(event: AlertEvent) -> list[tuple]:
    """(person, transport, destination, deliver_after) for everyone who hears about this event; deliver_after
    holds an email or webhook message for the person's digest or past their quiet hours."""
    if not AlertEventKind(event.kind).notifies or is_delivered_notice(event):
        return []
    if silences.silencing(event.alert, event.created):
        return []  # an admin's silence: the alert is there to see, nobody is told
    now = timezone.now()
    found = []
    for user in audience(event):
        prefs = preferences_of(user)
        for kind, destination in channels(event, prefs):
            if kind == TransportKind.IN_APP:
                found.append((user, kind, destination, None))
            elif not is_reopening(event):  # told when it opened; coming back updates it in the app, no new mail
                found.append((user, kind, destination, timing.release_at(prefs, kind, now)))
    return found


def dispatch_event(event_pk: int) -> list[Notification]:
    """Claim one event (exactly once), with every unclaimed event of the same moment (one evaluation's
    changes, which may be grouped), and create their notifications; delivery starts after commit."""
    with transaction.atomic():
        created = AlertEvent.objects.filter(pk=event_pk, processed=None).values_list("created", flat=True).first()
        if created is None:
            return []
        return notify(claim(AlertEvent.objects.filter(created=created)))


def dispatch_pending(limit: int = 1000, before: datetime | None = None) -> int:
    """Dispatch every event nobody has claimed yet (stored before `before`, if given), in one transaction,
    so that the alerts of one change are grouped before anything is sent."""
    events = AlertEvent.objects.all() if before is None else AlertEvent.objects.filter(created__lt=before)
    with transaction.atomic():
        return len(notify(claim(events, limit)))


# A hand-off is one broker hop; an event still unclaimed this long after it was stored lost its hand-off
# (the broker was down at commit, a worker died first).
LOST_AFTER = timedelta(minutes=1)


def dispatch_unclaimed(now: datetime) -> int:
    """The periodic catch-up: dispatch the events whose hand-off was lost."""
    return dispatch_pending(before=now - LOST_AFTER)


def claim(events, limit: int | None = None) -> list[AlertEvent]:
    """Lock and mark processed the unclaimed ones among `events`, oldest first. Every dispatcher locks in
    the same order and waits for the others, so it finds a claimed event processed and leaves it."""
    pending = events.filter(processed=None).order_by("created", "id").select_for_update(of=("self",))
    pks = list(pending.values_list("pk", flat=True)[:limit])
    AlertEvent.objects.filter(pk__in=pks).update(processed=timezone.now())
    rows = AlertEvent.objects.filter(pk__in=pks).select_related("alert__owner", "alert__project")
    return list(rows.order_by("created", "id"))


def notify(events: list[AlertEvent]) -> list[Notification]:
    pks = [pk for event in events for pk in grouping.record(event, wanted(event))]
    transaction.on_commit(lambda: start_delivery(pks))
    return list(Notification.objects.filter(pk__in=pks))


def start_delivery(notification_pks: list[int]) -> None:
    inapp = set(
        Notification.objects.filter(pk__in=notification_pks, transport=TransportKind.IN_APP).values_list(
            "pk", flat=True
        )
    )
    waiting = Notification.objects.filter(pk__in=notification_pks).filter(
        Q(deliver_after__isnull=False) | Q(group_until__isnull=False) & ~Q(transport=TransportKind.IN_APP)
    )
    held = set(waiting.values_list("pk", flat=True))  # for a digest, quiet hours or their group's window
    for pk in [pk for pk in notification_pks if pk not in held]:  # held ones: monitoring/notify/held.py
        if pk in inapp:
            deliver(pk)  # a row and a group message: cheap enough to do right here
        else:
            deliver_notification.delay(pk)


@shared_task(name="monitoring.tasks.dispatch_event", ignore_result=True)
def dispatch_event_task(event_pk: int) -> int:
    return len(dispatch_event(event_pk))


@receiver(events_recorded, dispatch_uid="monitoring.notify.hand_off")
def hand_off(sender, event_pk: int, **kwargs) -> None:
    """Events were just committed (an evaluation's, a reclaim's outcome): the central worker tells people now,
    not a beat period later; a node worker that ended a process never sends anything itself."""
    dispatch_event_task.delay(event_pk)
