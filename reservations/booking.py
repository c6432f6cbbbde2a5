"""Booking GPUs: each change is one transaction, and PostgreSQL itself refuses two overlapping bookings.

`conflicting_bookings` and `current_holders` are what other parts of the app (the fleet view, the run
launcher) ask before they touch a GPU.
"""

import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from fleet.localtime import as_utc, when
from inventory.models import GPU, GPUModel, Node, Project
from reservations import round_trip
from reservations.choices import ReservationEventKind, ReservationStatus
from reservations.events import record_event
from reservations.gpu_picking import NotEnoughGPUs, bookable_gpus, pick_free_gpus
from reservations.models import Reservation
from reservations.quotas import (
    Limits,
    QuotaError,
    Room,
    check_rules,
    check_weekly,
    limits_for,
    room_error,
    weekly_room,
)
from training.cancel import stop_runs_on_booking

NO_OVERLAP = "reservation_no_overlap"
# A form filled in at 10:00 and sent at 10:02 still means "from now".
START_GRACE = timedelta(minutes=5)
USER_LOCK, PROJECT_LOCK, GPU_LOCK = 7301, 7302, 7303


class BookingError(Exception):
    """A booking that cannot be made or changed, with a message for the researcher."""

    def __init__(self, message: str, field: str | None = None, conflicts: list[Reservation] | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.conflicts = conflicts or []


class BookingConflict(BookingError):
    """The GPUs are taken for part of the window."""


class NotAllowed(BookingError):
    """The caller may not make this change (a 403, not a 400)."""


@dataclass
class BookingRequest:
    """What a researcher asks for: specific GPUs, or `count` GPUs of `model` (optionally on one node)."""

    user: object
    start: datetime
    end: datetime
    gpus: list[GPU] = field(default_factory=list)
    model: GPUModel | None = None
    count: int = 0
    node: Node | None = None
    same_node: bool = False
    project: Project | None = None
    purpose: str = ""
    deadline_name: str = ""
    deadline_date: date | None = None
    override_quota: bool = False
    preempt: bool = False


# Reads other parts of the app rely on.


def conflicting_bookings(gpu_ids: list[int], user, start: datetime, end: datetime) -> list[Reservation]:
    """Active bookings of these GPUs by users other than `user` that overlap [start, end)."""
    rows = overlapping(gpu_ids, start, end)
    return [row for row in rows if user is None or row.user_id != user.pk]


def current_holders(gpu_ids: list[int] | None = None) -> dict[int, tuple[object, Reservation]]:
    """Who holds each GPU right now: gpu id → (user, reservation); `reservation.end` is until when."""
    now = timezone.now()
    rows = Reservation.objects.filter(status=ReservationStatus.ACTIVE, start__lte=now, end__gt=now)
    if gpu_ids is not None:
        rows = rows.filter(gpu_id__in=gpu_ids)
    return {row.gpu_id: (row.user, row) for row in rows.select_related("user", "project", "gpu__node")}


def overlapping(gpu_ids, start: datetime, end: datetime, exclude_booking=None) -> list[Reservation]:
    rows = Reservation.objects.filter(
        gpu_id__in=gpu_ids, status=ReservationStatus.ACTIVE, start__lt=end, end__gt=start
    ).select_related("user", "gpu__node")
    if exclude_booking is not None:
        rows = rows.exclude(booking=exclude_booking)
    return list(rows.order_by("start", "gpu_id"))


# Booking.


def book(request: BookingRequest, actor=None) -> list[Reservation]:
    """Book the GPUs (or pick free ones) for the window; raise BookingError with a clear message otherwise."""
    actor = actor or request.user
    request.start, request.end = as_utc(request.start), as_utc(request.end)
    check_request_allowed(request, actor)
    now = timezone.now()
    start = check_window(request.start, request.end, now)
    limits = None if request.override_quota else apply_rules(start, request.end, now, request.deadline_name)
    return insert(request, actor, start, limits)


def check_request_allowed(request: BookingRequest, actor) -> None:
    if (request.override_quota or request.preempt) and not actor.is_staff:
        raise NotAllowed("Only admins may override quotas or preempt other bookings.")
    if actor.pk != request.user.pk and not actor.is_staff:
        raise NotAllowed("You may only book for yourself.")
    if request.project is not None and not actor.is_staff:
        if not request.project.members.filter(pk=request.user.pk).exists():
            raise BookingError(f"You are not a member of project {request.project.name}.", field="project")
    if not request.gpus and (request.model is None or request.count < 1):
        raise BookingError("Choose GPUs, or a GPU model and how many.", field="gpus")
    if len({g.pk for g in request.gpus}) != len(request.gpus):
        raise BookingError("A GPU is listed twice.", field="gpus")


def check_window(start: datetime, end: datetime, now: datetime) -> datetime:
    """The start to book from (a start a few minutes ago means now), or a BookingError."""
    if end <= start:
        raise BookingError("The end must be after the start.", field="end")
    if start < now - START_GRACE:
        raise BookingError(f"The start ({when(start)}) is in the past.", field="start")
    start = max(start, now)
    if end <= start:
        raise BookingError(f"The end ({when(end)}) is in the past.", field="end")
    return start


def apply_rules(start: datetime, end: datetime, now: datetime, deadline_name: str) -> Limits:
    limits = limits_for(start, end)
    try:
        check_rules(start, end, now, limits, deadline_name)
    except QuotaError as exc:
        raise BookingError(exc.message, field=exc.field) from None
    return limits


def pick(request: BookingRequest, start: datetime) -> list[GPU]:
    try:
        return pick_free_gpus(request.model, request.count, start, request.end, request.node, request.same_node)
    except NotEnoughGPUs as exc:
        raise BookingError(exc.message, field="count") from None


def insert(request: BookingRequest, actor, start: datetime, limits: Limits | None) -> list[Reservation]:
    """Book named GPUs in one round trip, which also brings back what a refusal needs; pick or preempt
    statement by statement."""
    if request.gpus and not request.preempt:
        key = uuid.uuid4()
        rows = [new_reservation(request, key, gpu, start) for gpu in request.gpus]
        locks, room = locks_for(request, limits), rooms(request, start, limits)
        try:
            outcome = round_trip.insert_unless_taken(rows, locks, room)
        except IntegrityError as exc:
            if not is_overlap(exc):  # as below: only a writer that takes no lock gets here
                raise
            raise conflict_error([g.id for g in request.gpus], request.user, start, request.end) from None
        if outcome.saved:
            return rows
        if outcome.conflicts:
            raise conflict_error_from(outcome.conflicts, request.user)
        if outcome.over_room is not None:
            exc = room_error(room[outcome.over_room], outcome.booked, request.project, limits)
            raise BookingError(exc.message, field=exc.field)
    return insert_carefully(request, actor, start, limits)


def locks_for(request: BookingRequest, limits: Limits | None) -> list[tuple[int, int]]:
    """The advisory locks a booking takes, in the order every writer takes them: GPUs, user, project."""
    locks = [(GPU_LOCK, gpu_id) for gpu_id in sorted(g.id for g in request.gpus)]
    if limits is not None and limits.user_gpu_hours_per_week is not None:
        locks.append((USER_LOCK, request.user.pk))
    if limits is not None and request.project is not None and limits.project_gpu_hours_per_week is not None:
        locks.append((PROJECT_LOCK, request.project.pk))
    return locks


def rooms(request: BookingRequest, start: datetime, limits: Limits | None) -> list[Room]:
    if limits is None:
        return []
    return weekly_room(request.user, request.project, start, request.end, len(request.gpus), limits)


def insert_carefully(request: BookingRequest, actor, start: datetime, limits: Limits | None) -> list[Reservation]:
    """Check and insert under per-GPU locks, statement by statement; the exclusion constraint is beneath."""
    gpu_ids = []
    try:
        with transaction.atomic():
            gpus = lock_and_pick(request, start)
            gpu_ids = [g.id for g in gpus]
            if limits is not None:
                check_quota(request.user, request.project, start, request.end, len(gpus), limits)
            conflicts = overlapping(gpu_ids, start, request.end)
            if conflicts and request.preempt and all(row.user_id != request.user.pk for row in conflicts):
                preempt_rows(conflicts, actor, f"{actor.get_username()} needed the GPUs")
            elif conflicts:
                raise conflict_error_from(conflicts, request.user)
            key = uuid.uuid4()
            return Reservation.objects.bulk_create([new_reservation(request, key, gpu, start) for gpu in gpus])
    except IntegrityError as exc:
        # Only a writer that bypasses this module (an admin edit, a script) can get here first.
        if not is_overlap(exc):
            raise
        raise conflict_error(gpu_ids, request.user, start, request.end) from None


def lock_and_pick(request: BookingRequest, start: datetime) -> list[GPU]:
    if request.gpus:
        lock_gpus([g.id for g in request.gpus])
        return request.gpus
    # Pickers lock every candidate, so two of them never pick the same free GPUs.
    lock_gpus(bookable_gpus(request.model, request.node).values_list("id", flat=True))
    return pick(request, start)


def lock_gpus(gpu_ids) -> None:
    """Writers of one GPU's bookings take turns, in GPU order.

    Without this, two uncommitted overlapping inserts each wait for the other inside the exclusion
    check, and PostgreSQL breaks the deadlock only after deadlock_timeout (1 s). With it, a second
    booker waits for the first to commit, then sees its booking and is refused at once.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, g::int) FROM unnest(%s::bigint[]) AS g",
            [GPU_LOCK, sorted(set(gpu_ids))],
        )


def new_reservation(request: BookingRequest, key: uuid.UUID, gpu: GPU, start: datetime) -> Reservation:
    return Reservation(
        booking=key,
        user=request.user,
        project=request.project,
        gpu=gpu,
        start=start,
        end=request.end,
        purpose=request.purpose.strip(),
        deadline_name=request.deadline_name.strip(),
        deadline_date=request.deadline_date,
    )


def check_quota(user, project, start, end, gpu_count, limits: Limits, exclude_booking=None) -> None:
    """Weekly limits, checked under a per-user (and per-project) lock so two bookings can't both squeeze in."""
    if limits.user_gpu_hours_per_week is not None:
        advisory_lock(USER_LOCK, user.pk)
    if project is not None and limits.project_gpu_hours_per_week is not None:
        advisory_lock(PROJECT_LOCK, project.pk)
    try:
        check_weekly(user, project, start, end, gpu_count, limits, exclude_booking)
    except QuotaError as exc:
        raise BookingError(exc.message, field=exc.field) from None


def advisory_lock(namespace: int, key: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [namespace, key])


def is_overlap(exc: IntegrityError) -> bool:
    diag = getattr(exc.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None) == NO_OVERLAP


def conflict_error(gpu_ids, user, start, end, exclude_booking=None) -> BookingConflict:
    return conflict_error_from(overlapping(gpu_ids, start, end, exclude_booking), user)


def conflict_error_from(conflicts: list[Reservation], user) -> BookingConflict:
    parts = [f"GPU {row.gpu} is taken by {holder_name(row, user)} until {when(row.end)}" for row in conflicts[:3]]
    if len(conflicts) > 3:
        parts.append(f"and {len(conflicts) - 3} more")
    message = "; ".join(parts) + "." if parts else "The GPUs were just taken by someone else."
    return BookingConflict(message, field="gpus", conflicts=conflicts)


def holder_name(row: Reservation, user) -> str:
    return "you" if user is not None and row.user_id == user.pk else row.user.get_username()


# Changing a booking.


def active_rows(booking, actor, lock: bool = True) -> list[Reservation]:
    rows = Reservation.objects.filter(booking=booking, status=ReservationStatus.ACTIVE).select_related("user")
    rows = list(rows.select_for_update(of=("self",)) if lock else rows)
    if not rows:
        raise BookingError("This booking has no active GPUs left.")
    if actor.pk != rows[0].user_id and not actor.is_staff:
        raise NotAllowed("You may only change your own bookings.")
    return rows


def change_window(
    booking, actor, start: datetime | None = None, end: datetime | None = None, override_quota: bool = False
) -> list[Reservation]:
    """Extend or shorten a booking (or move one that has not started); PostgreSQL refuses a new overlap."""
    if override_quota and not actor.is_staff:
        raise NotAllowed("Only admins may override quotas.")
    start, end = (as_utc(moment) if moment else None for moment in (start, end))
    now = timezone.now()
    with transaction.atomic():
        lock_gpus(Reservation.objects.filter(booking=booking).values_list("gpu_id", flat=True))
        rows = active_rows(booking, actor)
        first = rows[0]
        new_start, new_end = new_window(first, start, end, now)
        if not override_quota:
            limits = apply_rules(new_start, new_end, now, first.deadline_name)
            check_quota(first.user, first.project, new_start, new_end, len(rows), limits, exclude_booking=booking)
        move(rows, new_start, new_end, actor)
        if actor.pk != first.user_id:
            note = f"{actor.get_username()} moved it to {when(new_start)} – {when(new_end)}"
            record_event(ReservationEventKind.CHANGED_BY_ADMIN, first, note, actor=actor)
    return rows


def new_window(first: Reservation, start, end, now) -> tuple[datetime, datetime]:
    new_start, new_end = start or first.start, end or first.end
    if new_start != first.start:
        if first.start <= now:
            raise BookingError("This booking has started; only its end can move.", field="start")
        return check_window(new_start, new_end, now), new_end
    if new_end <= new_start:
        raise BookingError("The end must be after the start.", field="end")
    if new_end <= now:
        raise BookingError(f"The end ({when(new_end)}) is in the past; cancel the booking to end it now.", "end")
    return new_start, new_end


def move(rows: list[Reservation], start: datetime, end: datetime, actor) -> None:
    ids = [row.pk for row in rows]
    conflicts = overlapping([row.gpu_id for row in rows], start, end, exclude_booking=rows[0].booking)
    if conflicts:
        raise conflict_error_from(conflicts, rows[0].user)
    changed_by = None if actor.pk == rows[0].user_id else actor
    try:
        with transaction.atomic():
            Reservation.objects.filter(pk__in=ids).update(start=start, end=end, changed_by=changed_by)
    except IntegrityError as exc:
        if not is_overlap(exc):
            raise
        raise conflict_error([r.gpu_id for r in rows], rows[0].user, start, end, rows[0].booking) from None
    for row in rows:
        row.start, row.end = start, end


def cancel(booking, actor) -> list[Reservation]:
    """Cancel a booking; one that has started ends now instead, so the time used still counts."""
    now = timezone.now()
    with transaction.atomic():
        rows = active_rows(booking, actor)
        changed_by = None if actor.pk == rows[0].user_id else actor
        for row in rows:
            if row.start < now:
                row.status, row.end = ReservationStatus.ENDED, min(row.end, now)
            else:
                row.status = ReservationStatus.CANCELLED
            row.status_changed, row.changed_by = now, changed_by
        Reservation.objects.bulk_update(rows, ["status", "end", "status_changed", "changed_by"])
        if changed_by is not None:
            note = f"{actor.get_username()} cancelled your booking of {len(rows)} GPU(s) from {when(rows[0].start)}"
            record_event(ReservationEventKind.CHANGED_BY_ADMIN, rows[0], note, actor=actor)
    return rows


def preempt(booking, actor, reason: str = "") -> list[Reservation]:
    """An admin takes a booking's GPUs back; the holder is told."""
    if not actor.is_staff:
        raise NotAllowed("Only admins may preempt bookings.")
    with transaction.atomic():
        rows = active_rows(booking, actor)
        reason = reason or f"{actor.get_username()} needed the GPUs"
        preempt_rows(rows, actor, reason)
        # The holder's runs on these GPUs get the same polite stop as a cancel: a checkpoint, then the end.
        stop_runs_on_booking(rows, f"Stopped: the booking was preempted by {actor.get_username()} ({reason}).")
    return rows


def preempt_rows(rows: list[Reservation], actor, reason: str) -> None:
    now = timezone.now()
    ids = [row.pk for row in rows]
    Reservation.objects.filter(pk__in=ids, status=ReservationStatus.ACTIVE).update(
        status=ReservationStatus.PREEMPTED, status_changed=now, changed_by=actor
    )
    for row in rows:
        row.status = ReservationStatus.PREEMPTED
        detail = f"Your booking of GPU {row.gpu} from {when(row.start)} to {when(row.end)} was preempted: {reason}"
        record_event(ReservationEventKind.PREEMPTED, row, detail, actor=actor)
