"""Idle time in stretches at least as long as the idle window, and the underused-GPU report, priced.

Read from the idle stretches the idle-process rule records (monitoring/alerts/rules/idle/stretches.py), clipped to
the period. "Underused" processes burst to real work between their quiet stretches: they are reported
here (and to their owner's digest), never alerted, escalated or reclaimed.
"""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import connection

from inventory.models import GPU, Project
from monitoring.alerts.choices import IdleStretchKind

CENT = Decimal("0.01")

TOTAL_SQL = """
SELECT coalesce(sum(extract(epoch FROM least(until, %(end)s) - greatest(began, %(start)s))), 0),
       sum(extract(epoch FROM least(until, %(end)s) - greatest(began, %(start)s)) * rate) / 3600
FROM monitoring_idlestretch
WHERE until > %(start)s AND began < %(end)s
"""

UNDERUSED_SQL = """
SELECT key, gpu_id, pid, max(name), max(os_user), max(owner_id), max(project_id), count(*), max(until),
       sum(extract(epoch FROM least(until, %(end)s) - greatest(began, %(start)s))) AS seconds,
       sum(extract(epoch FROM least(until, %(end)s) - greatest(began, %(start)s)) * rate) / 3600
FROM monitoring_idlestretch
WHERE kind = %(kind)s AND until > %(start)s AND began < %(end)s AND (%(owner)s::bigint IS NULL OR owner_id = %(owner)s)
GROUP BY key, gpu_id, pid
ORDER BY seconds DESC, key
LIMIT %(limit)s OFFSET %(offset)s
"""

UNDERUSED_COUNT_SQL = """
SELECT count(DISTINCT key)
FROM monitoring_idlestretch
WHERE kind = %(kind)s AND until > %(start)s AND began < %(end)s AND (%(owner)s::bigint IS NULL OR owner_id = %(owner)s)
"""


@dataclass(frozen=True)
class IdleTotal:
    """GPU-hours and their cost (None: no price known for any of them)."""

    hours: float
    cost: Decimal | None


@dataclass(frozen=True)
class UnderusedProcess:
    """One process that sat idle in stretches as long as the window between bursts of real work."""

    gpu: str
    node: str
    gpu_index: int
    pid: int
    name: str
    os_user: str
    owner: str | None
    project: str | None
    stretches: int
    idle_hours: float
    idle_cost: Decimal | None
    last_idle: datetime


def money(value) -> Decimal | None:
    return None if value is None else Decimal(value).quantize(CENT)


def idle_in_stretches(start: datetime, end: datetime) -> IdleTotal:
    """Every process's idle time in stretches at least as long as its window, forgotten or underused."""
    with connection.cursor() as cursor:
        cursor.execute(TOTAL_SQL, {"start": start, "end": end})
        seconds, cost = cursor.fetchone()
    return IdleTotal(float(seconds) / 3600, money(cost))


def report_params(start: datetime, end: datetime, owner) -> dict:
    owner_id = owner.pk if owner is not None else None
    return {"start": start, "end": end, "kind": IdleStretchKind.UNDERUSED, "owner": owner_id}


class UnderusedRows:
    """The underused report as a sequence a paginator slices: its length is one count, each page one read."""

    def __init__(self, start: datetime, end: datetime, owner=None) -> None:
        self.start, self.end, self.owner = start, end, owner

    def __len__(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute(UNDERUSED_COUNT_SQL, report_params(self.start, self.end, self.owner))
            return cursor.fetchone()[0]

    def count(self) -> int:
        return len(self)

    def __iter__(self):
        return iter(underused(self.start, self.end, self.owner))

    def __getitem__(self, part: slice) -> list[UnderusedProcess]:
        first = part.start or 0
        stop = len(self) if part.stop is None else part.stop
        return underused(self.start, self.end, self.owner, limit=max(0, stop - first), offset=first)


def underused(
    start: datetime, end: datetime, owner=None, limit: int | None = None, offset: int = 0
) -> list[UnderusedProcess]:
    """Underused processes in [start, end), most idle first; `owner` narrows it to one person (their digest).

    Without a limit, every one: a list that stops short says so (UnderusedRows pages it).
    """
    params = {**report_params(start, end, owner), "limit": limit, "offset": offset}
    with connection.cursor() as cursor:
        cursor.execute(UNDERUSED_SQL, params)
        rows = cursor.fetchall()
    gpus = GPU.objects.select_related("node").in_bulk({row[1] for row in rows})
    users = get_user_model().objects.in_bulk({row[5] for row in rows if row[5]})
    projects = Project.objects.in_bulk({row[6] for row in rows if row[6]})
    found = []
    for _key, gpu_id, pid, name, os_user, owner_id, project_id, count, last, seconds, cost in rows:
        gpu = gpus[gpu_id]
        person, project = users.get(owner_id), projects.get(project_id)
        found.append(
            UnderusedProcess(
                gpu=gpu.uuid,
                node=gpu.node.hostname,
                gpu_index=gpu.index,
                pid=pid,
                name=name,
                os_user=os_user,
                owner=person.get_username() if person else None,
                project=project.name if project else None,
                stretches=count,
                idle_hours=float(seconds) / 3600,
                idle_cost=money(cost),
                last_idle=last,
            )
        )
    return found
