"""Turn alert events into notifications: who hears about it, through which transports, per their preferences."""

from celery import shared_task
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from monitoring.alerts.choices import AlertEventKind, AlertKind, AlertSeverity
from monitoring.alerts.models import AlertEvent
from monitoring.notify.choices import TransportKind
from monitoring.notify.deliver import deliver, deliver_notification
from monitoring.notify.models import Notification, NotificationPreference


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


def channels(user, event: AlertEvent, prefs: NotificationPreference) -> list[tuple[str, object]]:
    """(transport, webhook) pairs for one person: in-app always, email and webhooks as they chose."""
    found: list[tuple[str, object]] = [(TransportKind.IN_APP, None)]
    alert = event.alert
    quiet = event.kind == AlertEventKind.RESOLVED and not prefs.resolved
    if quiet or (alert.is_snoozed() and event.kind != AlertEventKind.ESCALATED):
        return found
    emailed_elsewhere = alert.details.get("emailed", False)  # e.g. booking notices the watcher emailed
    severe_enough = AlertSeverity(alert.severity).rank >= AlertSeverity(prefs.email_min_severity).rank
    if prefs.email and user.email and severe_enough and not emailed_elsewhere:
        found.append((TransportKind.EMAIL, None))
    if prefs.webhooks:
        found += [(TransportKind.WEBHOOK, hook) for hook in user.webhooks.filter(active=True)]
    return found


def is_delivered_notice(event: AlertEvent) -> bool:
    """A notice resolves as soon as it opens; telling people it resolved would be noise."""
    return event.kind == AlertEventKind.RESOLVED and event.alert.kind == AlertKind.BOOKING_NOTICE


def preferences_of(user) -> NotificationPreference:
    prefs = NotificationPreference.objects.filter(user=user).first()
    return prefs or NotificationPreference(user=user)


def dispatch_event(event_pk: int) -> list[Notification]:
    """Claim one event (exactly once) and create its notifications; delivery starts after commit."""
    with transaction.atomic():
        if not AlertEvent.objects.filter(pk=event_pk, processed=None).update(processed=timezone.now()):
            return []
        event = AlertEvent.objects.select_related("alert__owner", "alert__project").get(pk=event_pk)
        if not AlertEventKind(event.kind).notifies or is_delivered_notice(event):
            return []
        notes = [
            Notification(event=event, user=user, transport=kind, webhook=hook)
            for user in audience(event)
            for kind, hook in channels(user, event, preferences_of(user))
        ]
        notes = Notification.objects.bulk_create(notes)
        transaction.on_commit(lambda: start_delivery([n.pk for n in notes]))
    return notes


def dispatch_pending(limit: int = 1000) -> int:
    """Dispatch every event nobody has claimed yet, oldest first."""
    pending = AlertEvent.objects.filter(processed=None).order_by("created", "id").values_list("pk", flat=True)
    count = 0
    for pk in list(pending[:limit]):
        count += len(dispatch_event(pk))
    return count


def start_delivery(notification_pks: list[int]) -> None:
    inapp = set(
        Notification.objects.filter(pk__in=notification_pks, transport=TransportKind.IN_APP).values_list(
            "pk", flat=True
        )
    )
    for pk in notification_pks:
        if pk in inapp:
            deliver(pk)  # a row and a group message: cheap enough to do right here
        else:
            deliver_notification.delay(pk)


@shared_task(name="monitoring.tasks.dispatch_event", ignore_result=True)
def dispatch_event_task(event_pk: int) -> int:
    return len(dispatch_event(event_pk))


def dispatch_after_commit(event_pk: int) -> None:
    transaction.on_commit(lambda: dispatch_event_task.delay(event_pk))
