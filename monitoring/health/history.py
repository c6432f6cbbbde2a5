"""A GPU's health history: its burn-ins, its XID errors, and each change of its memory health counters.

Memory health is read like XID errors (monitoring/storage/xid_history.py): from the minute rollups (each minute's
highest value) for the part of the range the raw samples no longer hold, from raw samples after.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from inventory.models import GPU
from monitoring.agent.metrics import METRICS
from monitoring.health.models import BurnIn
from monitoring.storage.xid_history import OLDEST_RAW, XidEvent, xid_events

HISTORY_DAYS = 30
BURNINS_SHOWN = 20
# The memory-health counters and flags, and their names for people, from the one metric list.
MEMORY_LABELS = {metric.key: metric.memory_health for metric in METRICS if metric.memory_health}
MEMORY_COUNTERS = tuple(MEMORY_LABELS)
FLAGS = {metric.key for metric in METRICS if metric.unit == "flag"}


@dataclass(frozen=True)
class MemoryChange:
    at: datetime
    metric: str
    previous: int
    value: int

    @property
    def label(self) -> str:
        return MEMORY_LABELS[self.metric]

    @property
    def text(self) -> str:
        if self.metric in FLAGS:
            return f"{self.label}: {'yes' if self.value else 'no longer'}"
        return f"{self.label}: {self.previous} → {self.value}"


@dataclass(frozen=True)
class HealthHistory:
    since: datetime
    burnins: list[BurnIn]
    xid_events: list[XidEvent]
    memory_changes: list[MemoryChange]

    def entries(self) -> list[tuple[datetime, str, object]]:
        """Everything in one list, newest first: (time, kind, item) with kind burnin, xid or memory."""
        rows = [(b.finished_at, "burnin", b) for b in self.burnins]
        rows += [(x.at, "xid", x) for x in self.xid_events]
        rows += [(m.at, "memory", m) for m in self.memory_changes]
        return sorted(rows, key=lambda row: row[0], reverse=True)


def gpu_history(gpu: GPU, days: int = HISTORY_DAYS, now: datetime | None = None) -> HealthHistory:
    end = now or timezone.now()
    start = end - timedelta(days=days)
    burnins = list(gpu.burnins.filter(finished_at__gte=start).select_related("run")[:BURNINS_SHOWN])
    return HealthHistory(start, burnins, xid_events(gpu.pk, start, end), memory_changes(gpu.pk, start, end))


def _readings() -> str:
    minute = ", ".join(f"{key}_max" for key in MEMORY_COUNTERS)
    raw = ", ".join(MEMORY_COUNTERS)
    return (
        f"SELECT bucket, {minute} FROM monitoring_gpuminute WHERE gpu_id = %s AND bucket >= %s AND bucket < %s "
        f"UNION ALL SELECT ts, {raw} FROM monitoring_gpusample WHERE gpu_id = %s AND ts >= %s AND ts < %s"
    )


CHANGES = (
    "SELECT at, {pairs} FROM (SELECT at, {lags} FROM ({readings}) AS readings (at, {columns})) AS paired ORDER BY at"
)


def memory_changes(gpu_id: int, start: datetime, end: datetime) -> list[MemoryChange]:
    """Each rise or fall of a memory health counter or flag within [start, end), oldest first."""
    columns = ", ".join(MEMORY_COUNTERS)
    lags = ", ".join(f"{key}, lag({key}) OVER (ORDER BY at) AS {key}_before" for key in MEMORY_COUNTERS)
    pairs = ", ".join(f"{key}_before, {key}" for key in MEMORY_COUNTERS)
    query = CHANGES.format(pairs=pairs, lags=lags, readings=_readings(), columns=columns)
    with connection.cursor() as cursor:
        cursor.execute(OLDEST_RAW, [gpu_id])
        oldest_raw = cursor.fetchone()[0] or end
        split = min(max(start, oldest_raw), end)
        cursor.execute(query, [gpu_id, start, split, gpu_id, split, end])
        rows = cursor.fetchall()
    changes = []
    for at, *values in rows:
        for position, key in enumerate(MEMORY_COUNTERS):
            before, value = values[2 * position], values[2 * position + 1]
            if before is not None and value is not None and before != value:
                changes.append(MemoryChange(at, key, int(before), int(value)))
    return changes
