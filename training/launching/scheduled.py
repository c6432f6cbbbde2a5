"""A run that starts when my booking begins: checked at launch, started by beat at the booking's start.

A launch may name one of the researcher's bookings (its id, the UUID its GPUs share). The run takes the
booking's GPUs; if the booking starts later, the run is stored "scheduled" and beat
(``training.tasks.start_scheduled_runs``) queues it at the start. A booking of someone else, a
cancelled or past one, or one shorter than the run's expected time (from past runs like it) is refused.
"""

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from fleet.localtime import when
from inventory.models import GPU
from reservations.choices import ReservationStatus
from reservations.models import Reservation
from training import broadcast, run_cost
from training.choices import RunStatus
from training.dispatch.send import send_shares
from training.models import IllegalTransition, Run, RunNode
from training.serializers import state_payload

log = logging.getLogger(__name__)


@dataclass
class BookedWindow:
    """The booking a run starts on: its first row, its GPUs and when it starts."""

    reservation: Reservation
    gpus: list[GPU]
    start: datetime
    end: datetime

    @property
    def later(self) -> bool:
        return self.start > timezone.now()


def check_booking(booking, user, errors: dict) -> BookedWindow | None:
    """The booking's window, or an error under ``booking``; nothing is written."""
    try:
        key = uuid.UUID(str(booking))
    except ValueError:
        errors["booking"] = "Give the id of one of your bookings (a UUID, as the reservations API shows it)."
        return None
    rows = list(Reservation.objects.filter(booking=key).select_related("user", "gpu__node", "gpu__model"))
    if not rows:
        errors["booking"] = f"There is no booking {key}."
        return None
    if rows[0].user_id != user.pk:
        errors["booking"] = (
            f"That booking is {rows[0].user.get_username()}'s; a run can start only on your own booking."
        )
        return None
    active = [row for row in rows if row.status == ReservationStatus.ACTIVE]
    if not active:
        errors["booking"] = f"That booking was {rows[0].get_status_display().lower()}; book again to run on it."
        return None
    if active[0].end <= timezone.now():
        errors["booking"] = f"That booking ended at {when(active[0].end)}."
        return None
    gpus = sorted((row.gpu for row in active), key=lambda gpu: (gpu.node.hostname, gpu.index))
    return BookedWindow(active[0], gpus, active[0].start, active[0].end)


def check_long_enough(window: BookedWindow, plan_facts: dict, errors: dict) -> None:
    """Refuse a booking shorter than the run's expected time; an unknown time is not refused."""
    expected = run_cost.estimate(**plan_facts).seconds
    start = max(window.start, timezone.now())
    left = (window.end - start).total_seconds()
    if expected is not None and expected > left:
        errors["booking"] = (
            f"The booking leaves {left / 60:.0f} min from {when(start)}; past runs like this one took about "
            f"{expected / 60:.0f} min. Book longer, or train for fewer epochs."
        )


def start_due_runs() -> list[int]:
    """Queue every scheduled run whose booking has begun; fail those whose booking is gone. Their ids."""
    due = Run.objects.filter(status=RunStatus.SCHEDULED, start_at__lte=timezone.now()).values_list("pk", flat=True)
    return [pk for pk in due if start_one(pk)]


def start_one(run_id: int) -> bool:
    with transaction.atomic():
        run = Run.objects.select_for_update(of=("self",)).select_related("reservation").get(pk=run_id)
        if run.status != RunStatus.SCHEDULED:
            return False
        reservation = run.reservation
        if reservation is None or reservation.status != ReservationStatus.ACTIVE:
            what = reservation.get_status_display().lower() if reservation else "deleted"
            run.finish(RunStatus.FAILED, error=f"Its booking was {what} before the run could start.")
            broadcast.send_after_commit(run.pk, state_payload(run))
            return True
        try:
            run.queue()
        except IllegalTransition:
            return False
        parts = list(RunNode.objects.filter(run=run).select_related("node"))
        RunNode.objects.filter(run=run).update(sent_at=timezone.now(), sends=1)
        broadcast.send_after_commit(run.pk, state_payload(run))
        transaction.on_commit(lambda: send_shares(run, parts))
    log.info("run %s: its booking began; queued", run_id)
    return True
