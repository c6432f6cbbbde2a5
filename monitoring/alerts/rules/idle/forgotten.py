"""Forgotten or underused: of the processes idle over their window, which showed no real work for hours.

A serving process bursts to real work between quiet stretches as long as any window, so the window alone
cannot tell it from a forgotten one. The look-back can: a forgotten process has no sample at or above
ALERT_IDLE_WORK_PCT in the ALERT_IDLE_FORGOTTEN_H hours before its window (or since it started, if later).
Missing data in the look-back is no work shown. Its GPU's minute rollups answer for a process alone on its
GPU; a process sharing a busy GPU is judged by its own SM share in the raw process samples.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection

from monitoring.alerts.windows import floor_minute, rolled_until

GPU_MINUTES_SQL = """
SELECT c.gpu_id, max(m.util_gpu_max)
FROM unnest(%(ids)s::bigint[], %(since)s::timestamptz[], %(until)s::timestamptz[]) AS c(gpu_id, since, until)
JOIN monitoring_gpuminute m ON m.gpu_id = c.gpu_id AND m.bucket >= c.since AND m.bucket < least(c.until, %(rolled)s)
GROUP BY c.gpu_id
"""

GPU_RAW_SQL = """
SELECT c.gpu_id, max(s.util_gpu)
FROM unnest(%(ids)s::bigint[], %(since)s::timestamptz[], %(until)s::timestamptz[]) AS c(gpu_id, since, until)
JOIN monitoring_gpusample s ON s.gpu_id = c.gpu_id AND s.ts >= greatest(c.since, %(rolled)s) AND s.ts < c.until
WHERE s.ts >= %(rolled)s AND s.ts < %(last)s
GROUP BY c.gpu_id
"""

PROCESS_SQL = """
SELECT c.gpu_id, c.pid, max(p.sm_util)
FROM unnest(%(gpus)s::bigint[], %(pids)s::bigint[], %(since)s::timestamptz[], %(until)s::timestamptz[])
     AS c(gpu_id, pid, since, until)
JOIN monitoring_processsample p ON p.gpu_id = c.gpu_id AND p.pid = c.pid AND p.ts >= c.since AND p.ts < c.until
WHERE p.ts >= %(first)s AND p.ts < %(last)s
GROUP BY c.gpu_id, c.pid
"""


def lookback() -> timedelta:
    return timedelta(hours=settings.ALERT_IDLE_FORGOTTEN_H)


def lookback_start(window_start: datetime, started_at: datetime | None) -> datetime:
    since = window_start - lookback()
    return max(since, started_at) if started_at else since


def worked(idle: list[tuple], now: datetime) -> set[str]:
    """Keys of the processes that reached the work threshold in their look-back: underused, not forgotten.

    `idle` holds (candidate, basis, window start) for the idle rule's candidates idle over their window.
    """
    ranges, alone, sharing = {}, [], []
    for c, basis, start in idle:
        since = floor_minute(lookback_start(start, c.started_at))
        if since < start:
            ranges[c.key] = (since, start)
            (alone if basis == "gpu" else sharing).append(c)
    peaks = gpu_peaks(alone, ranges, now) | process_peaks(sharing, ranges)
    return {key for key, peak in peaks.items() if peak is not None and peak >= settings.ALERT_IDLE_WORK_PCT}


def gpu_peaks(candidates: list, ranges: dict, now: datetime) -> dict[str, float | None]:
    if not candidates:
        return {}
    params = {
        "ids": [c.gpu.id for c in candidates],
        "since": [ranges[c.key][0] for c in candidates],
        "until": [ranges[c.key][1] for c in candidates],
    }
    params["last"] = max(params["until"])
    params["rolled"] = rolled_until({"m0": min(params["since"]), "m1": floor_minute(now)})
    by_gpu: dict[int, float] = {}
    with connection.cursor() as cursor:
        cursor.execute(GPU_MINUTES_SQL, params)
        rows = cursor.fetchall()
        if params["rolled"] < params["last"]:  # the rollup lags: read its missing minutes raw
            cursor.execute(GPU_RAW_SQL, params)
            rows += cursor.fetchall()
    for gpu_id, peak in rows:
        if peak is not None:
            by_gpu[gpu_id] = max(peak, by_gpu.get(gpu_id, peak))
    return {c.key: by_gpu.get(c.gpu.id) for c in candidates}


def process_peaks(candidates: list, ranges: dict) -> dict[str, float | None]:
    if not candidates:
        return {}
    params = {
        "gpus": [c.gpu.id for c in candidates],
        "pids": [c.pid for c in candidates],
        "since": [ranges[c.key][0] for c in candidates],
        "until": [ranges[c.key][1] for c in candidates],
    }
    params["first"], params["last"] = min(params["since"]), max(params["until"])
    with connection.cursor() as cursor:
        cursor.execute(PROCESS_SQL, params)
        by_pair = {(g, p): peak for g, p, peak in cursor.fetchall()}
    return {c.key: by_pair.get((c.gpu.id, c.pid)) for c in candidates}
