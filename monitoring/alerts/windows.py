"""Measured statistics over a time window: whole minutes from GPUMinute, the rest from raw samples.

A window counts as measured only when every whole minute in it has data and the first samples sit at
its very start: a gap is "not known", never "idle".
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection

from monitoring.alerts.memo import once
from monitoring.storage.models import RollupProgress

MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class WindowStats:
    """The largest value seen in a window, and whether samples cover all of it."""

    peak: float | None
    minutes: int  # whole minutes with data
    expected: int  # whole minutes in the window
    head_covered: bool = True  # the partial minute at the start has a sample near the start

    @property
    def covered(self) -> bool:
        return self.minutes >= self.expected and self.head_covered


def floor_minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def ceil_minute(moment: datetime) -> datetime:
    floor = floor_minute(moment)
    return floor if floor == moment else floor + MINUTE


def bounds(start: datetime, end: datetime) -> dict:
    """The window's whole minutes are [m0, m1); [start, m0) and [m1, end) are partial."""
    m0, m1 = ceil_minute(start), floor_minute(end)
    return {"start": start, "end": end, "m0": m0, "m1": max(m0, m1)}


def head_slack() -> timedelta:
    """How far after the window's start its first sample may be (a few sampling intervals)."""
    return timedelta(seconds=max(5.0, 2.5 * settings.AGENT_INTERVAL_S))


def stale_after() -> timedelta:
    """A GPU whose latest sample is older than this says nothing about now."""
    return timedelta(seconds=max(60.0, 5 * settings.AGENT_INTERVAL_S))


def stats(peak, minutes, head_first, b: dict) -> WindowStats:
    expected = int((b["m1"] - b["m0"]) / MINUTE)
    head_ok = b["start"] == b["m0"] or (head_first is not None and head_first - b["start"] <= head_slack())
    return WindowStats(peak, minutes or 0, expected, head_ok)


# Whole minutes the rollup has done come from GPUMinute (a few rows per GPU, by its (gpu, bucket) index);
# the rest are the last minute or two and the window's first partial minute of raw samples, read by time
# (BRIN on ts) for all GPUs at once: rows lie in time order, so one GPU's samples are scattered.
ROLLED_SQL = """
SELECT gpu_id, max(util_gpu_max), count(*)
FROM monitoring_gpuminute
WHERE gpu_id = ANY(%(ids)s) AND bucket >= %(m0)s AND bucket < %(rolled)s AND util_gpu_max IS NOT NULL
GROUP BY gpu_id
"""

# Grouped by minute first and then by GPU: a count(DISTINCT minute) sorts every sample (on disk, past work_mem).
# The bounds are whole minutes, so a sample's minute is on the same side of each as the sample.
RAW_SQL = """
SELECT gpu_id, max(peak), count(*) FILTER (WHERE minute >= %(rolled)s AND minute < %(m1)s),
       min(first) FILTER (WHERE minute < %(m0)s)
FROM (
    SELECT gpu_id, date_trunc('minute', ts) AS minute, max(util_gpu) AS peak, min(ts) AS first
    FROM monitoring_gpusample
    WHERE util_gpu IS NOT NULL
      AND ((ts >= %(start)s AND ts < %(m0)s) OR (ts >= %(rolled)s AND ts < %(end)s))
    GROUP BY 1, 2
) AS minutes
GROUP BY gpu_id
"""


def rolled_until(b: dict) -> datetime:
    """Where the minute rollup has got to, within the window's whole minutes."""
    progress = once(
        "minute_rollup", RollupProgress.objects.filter(table="minute").values_list("done_until", "late_since").first
    )
    done, late = progress or (None, None)
    if done is None:
        return b["m0"]
    if late is not None:  # minutes from the late mark on are being redone: read them raw
        done = min(done, floor_minute(late))
    return min(max(done, b["m0"]), b["m1"])


def gpu_util_windows(
    gpu_ids: list[int], start: datetime, end: datetime, busy_at: dict[int, float] | None = None
) -> dict[int, WindowStats]:
    """Peak GPU utilization of each GPU over [start, end): rolled-up minutes, raw samples for the rest.

    `busy_at` (GPU id → utilization) is for a caller to whom a GPU that reached that utilization anywhere in
    the window is simply busy: one whose raw samples already reach it is left out of the answer, and its
    minutes are not read (most GPUs of a working fleet are busy in their latest seconds).
    """
    if not gpu_ids:
        return {}
    b = bounds(start, end)
    b["rolled"] = rolled_until(b)
    busy_at = busy_at or {}
    with connection.cursor() as cursor:
        cursor.execute(RAW_SQL, b)
        raw = {gpu_id: (peak, minutes, first) for gpu_id, peak, minutes, first in cursor.fetchall()}
        busy = {g for g, (peak, _, _) in raw.items() if g in busy_at and peak is not None and peak >= busy_at[g]}
        gpu_ids = [g for g in gpu_ids if g not in busy]
        b["ids"] = gpu_ids
        cursor.execute(ROLLED_SQL, b)
        rolled = {gpu_id: (peak, minutes) for gpu_id, peak, minutes in cursor.fetchall()}
    found = {}
    for gpu_id in gpu_ids:
        rolled_peak, rolled_minutes = rolled.get(gpu_id, (None, 0))
        raw_peak, raw_minutes, first = raw.get(gpu_id, (None, 0, None))
        peaks = [p for p in (rolled_peak, raw_peak) if p is not None]
        found[gpu_id] = stats(max(peaks) if peaks else None, rolled_minutes + raw_minutes, first, b)
    return found


PROCESS_SM_SQL = """
SELECT p.gpu_id, p.pid, max(p.sm_util),
       count(DISTINCT date_trunc('minute', p.ts)) FILTER (WHERE p.ts >= %(m0)s AND p.ts < %(m1)s),
       min(p.ts) FILTER (WHERE p.ts < %(m0)s)
FROM monitoring_processsample p
JOIN unnest(%(gpus)s::bigint[], %(pids)s::bigint[]) AS c(gpu_id, pid) ON p.gpu_id = c.gpu_id AND p.pid = c.pid
WHERE p.ts >= %(start)s AND p.ts < %(end)s AND p.sm_util IS NOT NULL
GROUP BY p.gpu_id, p.pid
"""


def process_sm_windows(
    pairs: list[tuple[int, int]], start: datetime, end: datetime
) -> dict[tuple[int, int], WindowStats]:
    """Peak SM share of each (GPU, pid) over [start, end), from raw process samples (they have no rollup)."""
    if not pairs:
        return {}
    b = bounds(start, end)
    params = {**b, "gpus": [g for g, _ in pairs], "pids": [p for _, p in pairs]}
    with connection.cursor() as cursor:
        cursor.execute(PROCESS_SM_SQL, params)
        rows = cursor.fetchall()
    found = {(gpu_id, pid): stats(peak, minutes, first, b) for gpu_id, pid, peak, minutes, first in rows}
    return {pair: found.get(pair, stats(None, 0, None, b)) for pair in pairs}


FIRST_SEEN_SQL = """
SELECT DISTINCT p.gpu_id, p.pid
FROM monitoring_processsample p
JOIN unnest(%(gpus)s::bigint[], %(pids)s::bigint[]) AS c(gpu_id, pid) ON p.gpu_id = c.gpu_id AND p.pid = c.pid
WHERE p.ts >= %(since)s AND p.ts <= %(until)s
"""


def seen_at(pairs: list[tuple[int, int]], moment: datetime) -> set[tuple[int, int]]:
    """The (GPU, pid) pairs sampled right at `moment` (for processes that report no start time)."""
    if not pairs:
        return set()
    params = {
        "gpus": [g for g, _ in pairs],
        "pids": [p for _, p in pairs],
        "since": moment,
        "until": moment + head_slack(),
    }
    with connection.cursor() as cursor:
        cursor.execute(FIRST_SEEN_SQL, params)
        return set(cursor.fetchall())


PROCESS_MEMORY_SQL = """
SELECT p.gpu_id, p.pid, min(p.mem_used_mib), max(p.mem_used_mib), min(p.ts)
FROM monitoring_processsample p
JOIN unnest(%(gpus)s::bigint[], %(pids)s::bigint[]) AS c(gpu_id, pid) ON p.gpu_id = c.gpu_id AND p.pid = c.pid
WHERE p.ts >= %(start)s AND p.ts < %(end)s AND p.mem_used_mib IS NOT NULL
GROUP BY p.gpu_id, p.pid
"""


@dataclass(frozen=True)
class MemoryStats:
    """The known memory readings of one process over a window (a null reading is unknown and left out)."""

    low: float | None
    high: float | None
    first: datetime | None

    def starts_by(self, start: datetime) -> bool:
        return self.first is not None and self.first - start <= head_slack()


def process_memory_windows(
    pairs: list[tuple[int, int]], start: datetime, end: datetime
) -> dict[tuple[int, int], MemoryStats]:
    """Lowest and highest known memory of each (GPU, pid) over [start, end), and its first known reading."""
    if not pairs:
        return {}
    params = {"start": start, "end": end, "gpus": [g for g, _ in pairs], "pids": [p for _, p in pairs]}
    with connection.cursor() as cursor:
        cursor.execute(PROCESS_MEMORY_SQL, params)
        found = {(g, p): MemoryStats(low, high, first) for g, p, low, high, first in cursor.fetchall()}
    return {pair: found.get(pair, MemoryStats(None, None, None)) for pair in pairs}


PROCESS_MEMORY_SINCE_SQL = """
SELECT p.gpu_id, p.pid, min(p.mem_used_mib), max(p.mem_used_mib), min(p.ts)
FROM monitoring_processsample p
JOIN unnest(%(gpus)s::bigint[], %(pids)s::bigint[], %(since)s::timestamptz[]) AS c(gpu_id, pid, since)
  ON p.gpu_id = c.gpu_id AND p.pid = c.pid AND p.ts >= c.since
WHERE p.ts >= %(first)s AND p.ts < %(end)s AND p.mem_used_mib IS NOT NULL
GROUP BY p.gpu_id, p.pid
"""


def process_memory_since(triples: list[tuple[int, int, datetime]], end: datetime) -> dict[tuple[int, int], MemoryStats]:
    """Like process_memory_windows, each (GPU, pid) read from its own start up to `end`."""
    if not triples:
        return {}
    params = {
        "gpus": [g for g, _, _ in triples],
        "pids": [p for _, p, _ in triples],
        "since": [since for _, _, since in triples],
        "first": min(since for _, _, since in triples),
        "end": end,
    }
    with connection.cursor() as cursor:
        cursor.execute(PROCESS_MEMORY_SINCE_SQL, params)
        found = {(g, p): MemoryStats(low, high, first) for g, p, low, high, first in cursor.fetchall()}
    return {(g, p): found.get((g, p), MemoryStats(None, None, None)) for g, p, _ in triples}
