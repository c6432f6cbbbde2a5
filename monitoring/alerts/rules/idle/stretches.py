"""Idle stretches: every process the idle rule finds idle over its window, forgotten or underused, as rows.

A sighting whose window reaches back to a stretch's last sighting continues that stretch (the process has
been idle all along); otherwise it starts a new one at its window's start. The Costs page prices them: the
waste panel's "idle in stretches as long as the window", and the underused-GPU report.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from inventory.prices import rates_by_gpu
from monitoring.alerts.choices import IdleStretchKind
from monitoring.alerts.models import IdleStretch


@dataclass(frozen=True)
class Sighting:
    """An idle-rule candidate found idle over its whole window, which began at `since`."""

    candidate: object  # monitoring.alerts.rules.idle.rule.Candidate
    kind: IdleStretchKind
    since: datetime


def checked_until(keys: list[str], start: datetime) -> dict[str, datetime]:
    """For processes whose idle stretch covers `start`: up to when their readings were already checked.

    Every evaluation that extended a stretch found the process idle over its window, so the stretch's span
    [began, until) has been checked throughout; a window starting inside it needs reading only from `until`.
    """
    found = IdleStretch.objects.filter(key__any=keys, began__lte=start, until__gte=start)
    return dict(found.values_list("key", "until"))


def record(sightings: list[Sighting], now: datetime) -> None:
    if not sightings:
        return
    keys = [s.candidate.key for s in sightings]
    earliest = min(s.since for s in sightings)
    rows = IdleStretch.objects.filter(key__any=keys, until__gte=earliest).order_by("until")
    latest = {key: (pk, until) for pk, key, until in rows.values_list("pk", "key", "until")}
    continued, started = {}, []
    for s in sightings:
        pk, until = latest.get(s.candidate.key, (None, None))
        if pk is not None and until >= s.since:
            continued[pk] = s.kind
        else:
            started.append(s)
    extend(continued, now)
    rates = rates_by_gpu({s.candidate.gpu.id for s in started}) if started else {}
    IdleStretch.objects.bulk_create(new_stretch(s, now, rates.get(s.candidate.gpu.id)) for s in started)


# One statement for every continued stretch (the ORM's bulk_update builds a CASE per row and field).
EXTEND_SQL = """
UPDATE monitoring_idlestretch s SET until = %(now)s, kind = c.kind
FROM unnest(%(ids)s::bigint[], %(kinds)s::text[]) AS c(id, kind)
WHERE s.id = c.id
"""


def extend(kinds: dict[int, str], now: datetime) -> None:
    """Continue these stretches (id → the kind of the latest sighting) up to now."""
    if kinds:
        with connection.cursor() as cursor:
            cursor.execute(EXTEND_SQL, {"now": now, "ids": list(kinds), "kinds": [str(k) for k in kinds.values()]})


def new_stretch(s: Sighting, now: datetime, rate) -> IdleStretch:
    c = s.candidate
    return IdleStretch(
        key=c.key,
        kind=s.kind,
        gpu_id=c.gpu.id,
        pid=c.pid,
        os_user=(c.process.get("user") or "")[:64],
        name=(c.process.get("name") or "")[:200],
        owner_id=c.owner_id,
        project_id=c.project_id,
        began=s.since,
        until=now,
        rate=rate,
    )
