"""Booking GPUs in one round trip to PostgreSQL: the usual case (free GPUs, within quota) of `fleet.booking.book`.

The locks and the checked insert travel as one multi-statement query, which PostgreSQL runs as one
transaction. Under READ COMMITTED each statement takes its own snapshot, so the insert, which runs after
the locks are granted, sees every booking committed by whoever held them: the same guarantee as taking
the locks, then checking, then inserting in three round trips. The exclusion constraint stays the
final guard against writers that take no lock.

Nothing is inserted when a GPU is taken or a weekly limit would be passed; the caller then explains why.
"""

from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from fleet.choices import ReservationStatus
from fleet.models import Reservation
from fleet.quotas import COUNTED, Room

LOCK = """
SELECT pg_advisory_xact_lock(l.space, l.key) FROM unnest(%(lock_spaces)s::int[], %(lock_keys)s::int[]) AS l(space, key)
"""

CHECKED_INSERT = """
WITH taken AS MATERIALIZED (
    SELECT EXISTS (
        SELECT FROM fleet_reservation r
        WHERE r.gpu_id = ANY(%(gpus)s::int[]) AND r.status = %(active)s
          AND r.start < %(end)s::timestamptz AND r."end" > %(start)s::timestamptz
    ) AS yes
), over_quota AS MATERIALIZED (
    SELECT EXISTS (
        SELECT FROM unnest(
            %(room_users)s::int[], %(room_projects)s::int[], %(room_from)s::timestamptz[],
            %(room_to)s::timestamptz[], %(room)s::interval[]
        ) AS q(user_id, project_id, week_start, week_end, room)
        WHERE (
            SELECT coalesce(sum(least(r."end", q.week_end) - greatest(r.start, q.week_start)), interval '0')
            FROM fleet_reservation r
            WHERE (r.user_id = q.user_id OR r.project_id = q.project_id) AND r.status = ANY(%(counted)s::text[])
              AND r.start < q.week_end AND r."end" > q.week_start
        ) > q.room
    ) AS yes
), added AS (
    INSERT INTO fleet_reservation
        (booking, user_id, project_id, gpu_id, start, "end", purpose, deadline_name, deadline_date, status, created)
    SELECT %(booking)s::uuid, %(user)s::int, %(project)s::int, g.id, %(start)s::timestamptz, %(end)s::timestamptz,
           %(purpose)s::text, %(deadline_name)s::text, %(deadline_date)s::date, %(active)s, %(created)s::timestamptz
    FROM unnest(%(gpus)s::int[]) AS g(id), taken, over_quota
    WHERE NOT taken.yes AND NOT over_quota.yes
    RETURNING id, gpu_id
)
SELECT taken.yes, over_quota.yes, array(SELECT ARRAY[gpu_id, id] FROM added) FROM taken, over_quota
"""
QUERY = f"{LOCK.strip()};\n{CHECKED_INSERT.strip()}"
COUNTED_STATUSES = [str(status) for status in COUNTED]


@dataclass
class Outcome:
    """What the one round trip found; `saved` is true when the rows are now in the database."""

    saved: bool
    taken: bool = False
    over_quota: bool = False


def usable() -> bool:
    # Multi-statement queries need client-side binding, Django's default for psycopg 3.
    return not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")


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
            taken, over_quota, added = run(params)
    else:
        taken, over_quota, added = run(params)
    if not added:
        return Outcome(saved=False, taken=taken, over_quota=over_quota)
    ids = dict(added)  # gpu id → row id
    for row in rows:
        row.pk, row.created = ids[row.gpu_id], created
        row._state.adding, row._state.db = False, connection.alias
    return Outcome(saved=True)


def run(params: dict) -> tuple[bool, bool, list[list[int]]]:
    with connection.cursor() as cursor:
        cursor.execute(QUERY, params)
        cursor.nextset()
        return cursor.fetchone()
