"""Measured statistics over a time window: whole minutes from GPUMinute, the rest from raw samples.

A window counts as measured only when (nearly) every minute of it has data: a gap is "not known",
never "idle".
"""

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection

MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class WindowStats:
    """The largest value seen in a window and how many of its minutes had data."""

    peak: float | None
    minutes: int
    expected: int

    @property
    def covered(self) -> bool:
        # One minute may be missing: the current minute's first sample may not have arrived yet.
        return self.expected > 0 and self.minutes >= self.expected - 1


def floor_minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def ceil_minute(moment: datetime) -> datetime:
    floor = floor_minute(moment)
    return floor if floor == moment else floor + MINUTE


def expected_minutes(start: datetime, end: datetime) -> int:
    """How many minute buckets the window [start, end) touches."""
    return max(0, math.ceil((end - floor_minute(start)).total_seconds() / 60))


GPU_UTIL_SQL = """
WITH ids AS (SELECT unnest(%(ids)s::bigint[]) AS gpu_id),
rolled AS (
    SELECT gpu_id, max(util_gpu_max) AS peak, count(*) AS minutes, max(bucket) + interval '1 minute' AS rolled_to
    FROM monitoring_gpuminute
    WHERE gpu_id = ANY(%(ids)s) AND bucket >= %(m0)s AND bucket < %(m1)s AND util_gpu_max IS NOT NULL
    GROUP BY gpu_id
)
SELECT ids.gpu_id, greatest(rolled.peak, raw.peak), coalesce(rolled.minutes, 0) + coalesce(raw.minutes, 0)
FROM ids
LEFT JOIN rolled ON rolled.gpu_id = ids.gpu_id
LEFT JOIN LATERAL (
    SELECT max(s.util_gpu) AS peak, count(DISTINCT date_trunc('minute', s.ts)) AS minutes
    FROM monitoring_gpusample s
    WHERE s.gpu_id = ids.gpu_id AND s.util_gpu IS NOT NULL
      AND ((s.ts >= %(start)s AND s.ts < %(m0)s)
           OR (s.ts >= coalesce(rolled.rolled_to, %(m0)s) AND s.ts < %(end)s))
) raw ON true
"""


def gpu_util_windows(gpu_ids: list[int], start: datetime, end: datetime) -> dict[int, WindowStats]:
    """Peak GPU utilization of each GPU over [start, end): rolled-up minutes plus raw samples for the rest."""
    if not gpu_ids:
        return {}
    m0, m1 = ceil_minute(start), floor_minute(end)
    if m1 < m0:
        m1 = m0
    params = {"ids": list(gpu_ids), "start": start, "end": end, "m0": m0, "m1": m1}
    with connection.cursor() as cursor:
        cursor.execute(GPU_UTIL_SQL, params)
        rows = cursor.fetchall()
    expected = expected_minutes(start, end)
    return {gpu_id: WindowStats(peak, minutes, expected) for gpu_id, peak, minutes in rows}


PROCESS_SM_SQL = """
SELECT p.gpu_id, p.pid, max(p.sm_util), count(DISTINCT date_trunc('minute', p.ts))
FROM monitoring_processsample p
JOIN unnest(%(gpus)s::bigint[], %(pids)s::bigint[]) AS c(gpu_id, pid) ON p.gpu_id = c.gpu_id AND p.pid = c.pid
WHERE p.ts >= %(start)s AND p.ts < %(end)s AND p.sm_util IS NOT NULL
GROUP BY p.gpu_id, p.pid
"""


def process_sm_windows(
    pairs: list[tuple[int, int]], start: datetime, end: datetime
) -> dict[tuple[int, int], WindowStats]:
    """Peak SM share of each (GPU, pid) over [start, end), from raw process samples (no rollup exists)."""
    if not pairs:
        return {}
    params = {"gpus": [g for g, _ in pairs], "pids": [p for _, p in pairs], "start": start, "end": end}
    with connection.cursor() as cursor:
        cursor.execute(PROCESS_SM_SQL, params)
        rows = cursor.fetchall()
    expected = expected_minutes(start, end)
    found = {(gpu_id, pid): WindowStats(peak, minutes, expected) for gpu_id, pid, peak, minutes in rows}
    return {pair: found.get(pair, WindowStats(None, 0, expected)) for pair in pairs}


FIRST_SEEN_SQL = """
SELECT p.gpu_id, p.pid, min(p.ts)
FROM monitoring_processsample p
JOIN unnest(%(gpus)s::bigint[], %(pids)s::bigint[]) AS c(gpu_id, pid) ON p.gpu_id = c.gpu_id AND p.pid = c.pid
WHERE p.ts >= %(since)s AND p.ts < %(until)s
GROUP BY p.gpu_id, p.pid
"""


def seen_since(pairs: list[tuple[int, int]], moment: datetime, slack: timedelta = 2 * MINUTE) -> set[tuple[int, int]]:
    """The (GPU, pid) pairs whose process was already sampled around `moment` (for processes without a start time)."""
    if not pairs:
        return set()
    params = {
        "gpus": [g for g, _ in pairs],
        "pids": [p for _, p in pairs],
        "since": moment - slack,
        "until": moment + slack,
    }
    with connection.cursor() as cursor:
        cursor.execute(FIRST_SEEN_SQL, params)
        return {(gpu_id, pid) for gpu_id, pid, _ in cursor.fetchall()}
