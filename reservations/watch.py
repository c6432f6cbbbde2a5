"""Tie bookings to real use, from each GPU's latest reported processes (run each minute by beat).

- a holder's process on a booked GPU records the booking's first use;
- a booked GPU that shows none of its holder's processes within the no-show grace is released;
- another user's process on a GPU booked right now is recorded as squatting.
Owners come from training.owners: a run's process is its run's owner's, any other its OS user's researcher.
A process with neither a run nor an OS user NVML could tell is nobody's: it neither counts as use nor as squatting.
"""

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from fleet.localtime import when
from inventory.models import Project
from monitoring.storage import latest
from reservations.choices import ReservationEventKind, ReservationStatus
from reservations.events import email_pending_events, record_event
from reservations.models import Reservation, ReservationEvent
from training.owners import ProcessOwners, owner_key

log = logging.getLogger(__name__)


@dataclass
class WatchReport:
    """What one pass did, for logs and tests."""

    ended: int = 0
    first_used: int = 0
    released: int = 0
    squatting: list[str] = field(default_factory=list)
    emailed: int = 0


def watch_reservations(now: datetime | None = None) -> WatchReport:
    now = now or timezone.now()
    report = WatchReport()
    report.ended = end_finished(now)
    rows = in_progress(now)
    report.first_used, report.squatting = observe(rows, now)
    report.released = release_no_shows(now)
    report.emailed = email_pending_events()
    return report


def end_finished(now: datetime) -> int:
    return Reservation.objects.filter(status=ReservationStatus.ACTIVE, end__lte=now).update(
        status=ReservationStatus.ENDED, status_changed=now
    )


def in_progress(now: datetime) -> list[Reservation]:
    rows = Reservation.objects.filter(status=ReservationStatus.ACTIVE, start__lte=now, end__gt=now)
    return [row for row in rows.select_related("gpu__node", "gpu__state", "user") if fresh(row.gpu, now)]


def fresh(gpu, now: datetime) -> bool:
    """Only a recent sample says what runs on a GPU; without one we don't know, so we don't act."""
    stale = timedelta(seconds=settings.RESERVATION_TELEMETRY_STALE_S)
    sampled = latest.of(gpu).last_sample_at
    return sampled is not None and sampled >= now - stale


def processes_of(gpu) -> list[dict]:
    """The GPU's processes whose owner can be looked up: those of a run, and those with an OS user."""
    return [p for p in (latest.of(gpu).processes or []) if isinstance(p, dict) and owner_key(p)]


def observe(rows: list[Reservation], now: datetime) -> tuple[int, list[str]]:
    owners = ProcessOwners(p for row in rows for p in processes_of(row.gpu))
    members = project_members({row.project_id for row in rows if row.project_id})
    used, squatting = [], []
    for row in rows:
        allowed = {row.user_id} | members.get(row.project_id, set())
        for process in processes_of(row.gpu):
            owner = owners.of(process)
            if owner is not None and owner.pk in allowed:
                used.append(row.pk)
            elif note_squatting(row, process, owner, now):
                squatting.append(process.get("user") or owner_key(process))
    first = Reservation.objects.filter(pk__in=used, first_used_at=None).update(first_used_at=now)
    return first, squatting


def project_members(project_ids: set[int]) -> dict[int, set[int]]:
    members = {}
    through = Project.members.through.objects.filter(project_id__in=project_ids)
    for project_id, user_id in through.values_list("project_id", "user_id"):
        members.setdefault(project_id, set()).add(user_id)
    return members


def note_squatting(row: Reservation, process: dict, squatter, now: datetime) -> bool:
    """Record the squatter once per booking; later sightings only move `last_seen`. True when new."""
    os_user = (process.get("user") or "")[:64]
    pid = process.get("pid") if isinstance(process.get("pid"), int) and process["pid"] >= 0 else None
    seen = ReservationEvent.objects.filter(reservation=row, kind=ReservationEventKind.SQUATTING, os_user=os_user)
    if seen.update(last_seen=now, pid=pid):
        return False
    who = squatter.get_username() if squatter else f"OS user {os_user} (no known researcher)"
    detail = (
        f"{who} runs a process (pid {pid if pid is not None else 'N/A'}) on GPU {row.gpu}, "
        f"which {row.user.get_username()} booked until {when(row.end)}."
    )
    if type(process.get("unverified_run")) is int:
        detail += f" It claims run {process['unverified_run']}, which is not placed on this GPU: not believed."
    try:
        with transaction.atomic():
            record_event(ReservationEventKind.SQUATTING, row, detail, actor=squatter, os_user=os_user, pid=pid)
    except IntegrityError:  # another watcher recorded it a moment ago
        return False
    return True


def release_no_shows(now: datetime) -> int:
    grace = timedelta(minutes=settings.RESERVATION_NO_SHOW_MINUTES)
    candidates = Reservation.objects.filter(
        status=ReservationStatus.ACTIVE, first_used_at=None, start__lte=now - grace, end__gt=now
    ).select_related("gpu__node")
    released = 0
    for row in candidates:
        if fresh(row.gpu, now) and release(row, now, grace):
            released += 1
    return released


def release(row: Reservation, now: datetime, grace: timedelta) -> bool:
    with transaction.atomic():
        claimed = Reservation.objects.filter(pk=row.pk, status=ReservationStatus.ACTIVE, first_used_at=None).update(
            status=ReservationStatus.RELEASED, status_changed=now
        )
        if claimed:
            minutes = int(grace.total_seconds() // 60)
            detail = (
                f"Your booking of GPU {row.gpu} from {when(row.start)} to {when(row.end)} was released: none of "
                f"your processes ran on it within {minutes} minutes of its start, so others may use it now."
            )
            record_event(ReservationEventKind.RELEASED, row, detail)
    return bool(claimed)


@shared_task(name="fleet.watch_reservations", soft_time_limit=50, time_limit=55, ignore_result=True)
def watch_reservations_task() -> dict:
    """Each minute: end finished bookings, note first use, release no-shows, record squatting, send emails."""
    report = watch_reservations()
    if report.released or report.squatting:
        log.info("reservations: %s", report)
    return report.__dict__
