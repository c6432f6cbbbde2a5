"""Booking GPUs in one round trip to PostgreSQL: the usual case (free GPUs, within quota) of `fleet.booking.book`.

The locks and the checked insert travel as one multi-statement query, which PostgreSQL runs as one
transaction. Under READ COMMITTED each statement takes its own snapshot, so the insert, which runs after
the locks are granted, sees every booking committed by whoever held them: the same guarantee as taking
the locks, then checking, then inserting in three round trips. The exclusion constraint stays the
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

from fleet.choices import ReservationStatus
from fleet.models import GPU, Node, Reservation
from fleet.quotas import COUNTED, Room

LOCK = """
SELECT pg_advisory_xact_lock(l.space, l.key) FROM unnest(%(lock_spaces)s::int[], %(lock_keys)s::int[]) AS l(space, key)
"""

CHECKED_INSERT = """
WITH conflicts AS MATERIALIZED (
    SELECT r.id, r.gpu_id, r.user_id, u.username, g.index, n.hostname, r.start, r."end"
    FROM fleet_reservation r
    JOIN {users} u ON u.id = r.user_id
    JOIN fleet_gpu g ON g.id = r.gpu_id
    JOIN fleet_node n ON n.id = g.node_id
    WHERE r.gpu_id = ANY(%(gpus)s::int[]) AND r.status = %(active)s
      AND r.start < %(end)s::timestamptz AND r."end" > %(start)s::timestamptz
), over_quota AS MATERIALIZED (
    SELECT q.i, b.booked
    FROM unnest(
        %(room_users)s::int[], %(room_projects)s::int[], %(room_from)s::timestamptz[],
        %(room_to)s::timestamptz[], %(room)s::interval[]
    ) WITH ORDINALITY AS q(user_id, project_id, week_start, week_end, room, i)
    CROSS JOIN LATERAL (
        SELECT coalesce(sum(least(r."end", q.week_end) - greatest(r.start, q.week_start)), interval '0') AS booked
        FROM fleet_reservation r
        WHERE (r.user_id = q.user_id OR r.project_id = q.project_id) AND r.status = ANY(%(counted)s::text[])
          AND r.start < q.week_end AND r."end" > q.week_start
    ) AS b
    WHERE b.booked > q.room
    ORDER BY q.i
    LIMIT 1
), added AS (
    INSERT INTO fleet_reservation
        (booking, user_id, project_id, gpu_id, start, "end", purpose, deadline_name, deadline_date, status, created)
    SELECT %(booking)s::uuid, %(user)s::int, %(project)s::int, g.id, %(start)s::timestamptz, %(end)s::timestamptz,
           %(purpose)s::text, %(deadline_name)s::text, %(deadline_date)s::date, %(active)s, %(created)s::timestamptz
    FROM unnest(%(gpus)s::int[]) AS g(id)
    WHERE NOT EXISTS (SELECT FROM conflicts) AND NOT EXISTS (SELECT FROM over_quota)
    RETURNING id, gpu_id
)
SELECT
    (SELECT json_agg(json_build_array(id, gpu_id, user_id, username, index, hostname, start, "end")
                     ORDER BY start, gpu_id) FROM conflicts),
    (SELECT i FROM over_quota), (SELECT booked FROM over_quota),
    array(SELECT ARRAY[gpu_id, id] FROM added)
"""

COUNTED_STATUSES = [str(status) for status in COUNTED]
_query: list[str] = []


def query() -> str:
    if not _query:
        users = connection.ops.quote_name(get_user_model()._meta.db_table)
        _query.append(f"{LOCK.strip()};\n{CHECKED_INSERT.strip().replace('{users}', users)}")
    return _query[0]


@dataclass
class Outcome:
    """What the one round trip found. `saved`: the rows are now in the database. Otherwise `conflicts`
    are the active bookings in the way (ordered by start, then GPU), or `over_room` is the index in
    `rooms` of the first weekly limit the booking would pass and `booked` what is booked in that week."""

    saved: bool
    conflicts: list[Reservation] = field(default_factory=list)
    over_room: int | None = None
    booked: timedelta | None = None


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
        cursor.execute(query(), params)
        cursor.nextset()
        return cursor.fetchone()
