"""Deliver one notification: claim it with a compare-and-set, call its transport, record what happened."""

from dataclasses import dataclass

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from monitoring.notify.choices import NotificationStatus
from monitoring.notify.models import Notification
from monitoring.notify.transports import TransportError, destination_kinds, transport_for


@dataclass(frozen=True)
class Outcome:
    """How one delivery attempt ended; `retry_in` seconds when it should be tried again."""

    status: str
    retry_in: float | None = None


def backoff(attempts: int) -> float:
    return settings.NOTIFY_RETRY_BASE_S * 2 ** (attempts - 1)


def claim(pk: int) -> bool:
    return Notification.objects.filter(pk=pk, processed=None).update(processed=timezone.now()) == 1


def deliver(pk: int) -> Outcome:
    if not claim(pk):
        return Outcome("claimed elsewhere")
    related = ("event__alert__owner", "event__alert__project", "user", *destination_kinds())
    note = Notification.objects.select_related(*related).get(pk=pk)
    note.attempts += 1
    try:
        transport_for(note).notify(note.event.alert)
    except TransportError as exc:
        return failed(note, exc)
    except Exception as exc:  # a bug in a transport: record it, never leave the row claimed and silent
        failed(note, TransportError(f"{type(exc).__name__}: {exc}", permanent=True))
        raise
    note.status, note.sent_at, note.error = NotificationStatus.SENT, timezone.now(), ""
    note.save(update_fields=["status", "sent_at", "error", "attempts"])
    return Outcome(NotificationStatus.SENT)


def failed(note: Notification, exc: TransportError) -> Outcome:
    note.error = f"attempt {note.attempts}: {exc.message}"
    if exc.permanent or note.attempts > settings.NOTIFY_MAX_RETRIES:
        note.status = NotificationStatus.FAILED
        note.save(update_fields=["status", "error", "attempts"])
        return Outcome(NotificationStatus.FAILED)
    note.processed = None  # release the claim so the retry can take it
    note.save(update_fields=["processed", "error", "attempts"])
    return Outcome(NotificationStatus.PENDING, retry_in=backoff(note.attempts))


@shared_task(name="monitoring.tasks.deliver_notification", bind=True, max_retries=None, ignore_result=True)
def deliver_notification(self, notification_pk: int) -> str:
    """Deliver through email or a webhook; transient failures come back with exponential backoff."""
    outcome = deliver(notification_pk)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status
