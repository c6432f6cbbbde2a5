"""Events on reservations (preempted, released, squatting, changed by an admin) and the emails that tell people.

Events are rows: the alert engine claims them through `processed`; the emails here go out once,
claimed through `emailed_at`, so two workers never send the same one.
"""

import logging
from collections import defaultdict

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from reservations.choices import ReservationEventKind
from reservations.models import Reservation, ReservationEvent

log = logging.getLogger(__name__)

SUBJECTS = {
    ReservationEventKind.PREEMPTED: "Your GPU booking was preempted",
    ReservationEventKind.RELEASED: "Your GPU booking was released: the GPUs were not used",
    ReservationEventKind.SQUATTING: "Someone else is using a GPU you booked",
    ReservationEventKind.CHANGED_BY_ADMIN: "An admin changed your GPU booking",
}


def record_event(
    kind: str, reservation: Reservation, detail: str, actor=None, os_user: str = "", pid: int | None = None
) -> ReservationEvent:
    return ReservationEvent.objects.create(
        kind=kind,
        reservation=reservation,
        user_id=reservation.user_id,
        actor=actor,
        os_user=os_user,
        pid=pid,
        detail=detail,
        last_seen=timezone.now() if kind == ReservationEventKind.SQUATTING else None,
    )


def claim_pending(limit: int) -> list[ReservationEvent]:
    with transaction.atomic():
        pending = (
            ReservationEvent.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(emailed_at=None)
            .select_related("user", "actor", "reservation__gpu__node")
            .order_by("created")[:limit]
        )
        events = list(pending)
        ReservationEvent.objects.filter(pk__in=[e.pk for e in events]).update(emailed_at=timezone.now())
    return events


def email_pending_events(limit: int = 500) -> int:
    """Send each affected person one email about their new events; return how many events were handled."""
    events = claim_pending(limit)
    by_user = defaultdict(list)
    for event in events:
        by_user[event.user].append(event)
    for user, theirs in by_user.items():
        deliver(user, subject_for(theirs), "\n\n".join(e.detail for e in theirs), theirs)
    for event in events:
        if event.kind == ReservationEventKind.SQUATTING and event.actor is not None:
            deliver(event.actor, "You are using a GPU someone else booked", squatter_text(event), [event])
    return len(events)


def subject_for(events: list[ReservationEvent]) -> str:
    if len(events) == 1:
        return f"GPU Fleet: {SUBJECTS[events[0].kind]}"
    return f"GPU Fleet: {len(events)} updates on your GPU bookings"


def squatter_text(event: ReservationEvent) -> str:
    return (
        f"{event.detail}\n\nPlease move the process (pid {event.pid or 'N/A'}) to a free GPU or book one; "
        "the Reservations page shows which are free."
    )


def deliver(user, subject: str, body: str, events: list[ReservationEvent]) -> None:
    if not user.email:
        mark_failed(events, f"{user.get_username()} has no email address")
        return
    footer = "\n\n— GPU Fleet. Your bookings are under Reservations → My bookings."
    try:
        send_mail(subject, body + footer, settings.DEFAULT_FROM_EMAIL, [user.email])
    except Exception as exc:  # any transport failure is recorded on the event, never lost
        log.warning("could not email %s about reservation events: %s", user.email, exc)
        mark_failed(events, f"{type(exc).__name__}: {exc}")


def mark_failed(events: list[ReservationEvent], error: str) -> None:
    ReservationEvent.objects.filter(pk__in=[e.pk for e in events]).update(email_error=error[:1000])
