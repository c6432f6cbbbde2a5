"""Booking GPUs in one round trip to PostgreSQL: the usual case (free GPUs, within quota) of `booking.book`.

The locks and the checked insert are one call of the PL/pgSQL function fleet_book(), which PostgreSQL
runs as one transaction and whose plans it keeps per session. Under READ COMMITTED each statement in the
function takes its own snapshot, so the insert, which runs after the locks are granted, sees every
booking committed by whoever held them: the same guarantee as taking the locks, then checking, then
inserting in three round trips. The exclusion constraint stays the
final guard against writers that take no lock.

Nothing is inserted when a GPU is taken or a weekly limit would be passed; the statement then returns
what the refusal needs (the bookings in the way with their holders and GPUs, or the first weekly limit
passed and the hours booked against it), so a refusal costs no second round trip either.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from inventory.models import GPU, Node
from reservations.choices import ReservationStatus
from reservations.models import Reservation
from reservations.quotas import COUNTED, Room

# fleet_book() is created by migration 0005: the advisory locks, then one statement that collects the
# bookings in the way, finds the first weekly limit passed, and inserts only if there are neither.
QUERY = """
SELECT conflicts, over_room, booked, added FROM fleet_book(
    %(lock_spaces)s::int[], %(lock_keys)s::int[], %(gpus)s::int[], %(active)s::text, %(counted)s::text[],
    %(room_users)s::int[], %(room_projects)s::int[], %(room_from)s::timestamptz[], %(room_to)s::timestamptz[],
    %(room)s::interval[], %(booking)s::uuid, %(user)s::int, %(project)s::int, %(start)s::timestamptz,
    %(end)s::timestamptz, %(purpose)s::text, %(deadline_name)s::text, %(deadline_date)s::date,
    %(created)s::timestamptz
)
"""
COUNTED_STATUSES = [str(status) for status in COUNTED]


@dataclass
class Outcome:
    """What the one round trip found. `saved`: the rows are now in the database. Otherwise `conflicts`
    are the active bookings in the way (ordered by start, then GPU), or `over_room` is the index in
    `rooms` of the first weekly limit the booking would pass and `booked` what is booked in that week."""

    saved: bool
    conflicts: list[Reservation] = field(default_factory=list)
    over_room: int | None = None
    booked: timedelta | None = None


def insert_unless_taken(rows: list[Reservation], locks: list[tuple[int, int]], rooms: list[Room]) -> Outcome:
    """Take the advisory `locks` (in order), then insert `rows` (one booking) if their GPUs are free and
    every `room` holds; on success the rows get their ids."""
    first = rows[0]
    created = timezone.now()
    params = {
        "lock_spaces": [space for space, _ in locks],
        "lock_keys": [key for _, key in locks],
        "gpus": [row.gpu_id for row in rows],
        "active": ReservationStatus.ACTIVE.value,
        "counted": COUNTED_STATUSES,
        "room_users": [room.user_id for room in rooms],
        "room_projects": [room.project_id for room in rooms],
        "room_from": [room.week_start for room in rooms],
        "room_to": [room.week_end for room in rooms],
        "room": [room.room for room in rooms],
        "booking": first.booking,
        "user": first.user_id,
        "project": first.project_id,
        "start": first.start,
        "end": first.end,
        "purpose": first.purpose,
        "deadline_name": first.deadline_name,
        "deadline_date": first.deadline_date,
        "created": created,
    }
    # Inside a caller's transaction a savepoint keeps a refused insert from spoiling it; on its own the
    # query is its own transaction and needs no BEGIN or COMMIT.
    if connection.in_atomic_block:
        with transaction.atomic():
            conflicts, over_room, booked, added = run(params)
    else:
        conflicts, over_room, booked, added = run(params)
    if not added:
        return Outcome(
            saved=False,
            conflicts=[conflict_row(values) for values in conflicts or []],
            over_room=None if over_room is None else over_room - 1,
            booked=booked,
        )
    ids = dict(added)  # gpu id → row id
    for row in rows:
        row.pk, row.created = ids[row.gpu_id], created
        row._state.adding, row._state.db = False, connection.alias
    return Outcome(saved=True)


def conflict_row(values: list) -> Reservation:
    """A booking in the way, with its GPU (and node) and holder attached, as the refusal message needs."""
    pk, gpu_id, user_id, username, index, hostname, start, end = values
    user_model = get_user_model()
    row = Reservation(
        pk=pk,
        gpu_id=gpu_id,
        user_id=user_id,
        start=parse_moment(start),
        end=parse_moment(end),
        status=ReservationStatus.ACTIVE,
    )
    row.gpu = GPU(pk=gpu_id, index=index, node=Node(hostname=hostname))
    row.user = user_model(pk=user_id, **{user_model.USERNAME_FIELD: username})
    row._state.adding, row._state.db = False, connection.alias
    return row


def parse_moment(text: str) -> datetime:
    # json renders timestamptz in the session's time zone (UTC under Django) with its offset.
    return datetime.fromisoformat(text).astimezone(UTC)


def run(params: dict) -> tuple[list | None, int | None, timedelta | None, list[list[int]]]:
    with connection.cursor() as cursor:
        cursor.execute(QUERY, params)
        return cursor.fetchone()
