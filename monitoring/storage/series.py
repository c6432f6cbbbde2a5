"""Metric series of GPUs over a time range, read from the coarsest table that covers it.

Raw samples for up to 6 hours within raw retention, 1-minute rollups for up to 7 days (within their
retention), hourly rollups beyond. Rollups lag by a minute or so; the part of the range they do not
cover yet is aggregated on the fly from the finer table, so a chart always reaches the present.

    gpu_series([gpu.pk], ["util_gpu", "temp_c"], start, end)
    → {"resolution": "minute", "gpus": {7: {"ts": [datetime, ...], "util_gpu": [97.0, ...],
                                            "util_gpu_min": [...], "util_gpu_max": [...], "temp_c": [...], ...}}}

With rollups, a metric's own series is its average per bucket (ecc_volatile: the maximum,
clocks_event_reasons: every reason seen), with _min and _max beside it where they exist.
None is a value the GPU could not report (N/A).
"""

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from inventory.models import GPU
from monitoring.agent.metrics import METRIC_KEYS
from monitoring.storage.columns import ROLLUP_COLUMNS
from monitoring.storage.models import RollupProgress
from monitoring.storage.rollups import hour_expression, minute_expression

RAW_SPAN = timedelta(hours=6)
MINUTE_SPAN = timedelta(days=7)
RAW, MINUTE, HOUR = "raw", "minute", "hour"


def resolution_for(start: datetime, end: datetime, now: datetime | None = None) -> str:
    now = now or timezone.now()
    span = end - start
    if span <= RAW_SPAN and start >= now - timedelta(hours=settings.FLEET_RAW_RETENTION_HOURS):
        return RAW
    if span <= MINUTE_SPAN and start >= now - timedelta(days=settings.FLEET_MINUTE_RETENTION_DAYS):
        return MINUTE
    return HOUR


def gpu_series(gpu_ids: Iterable[int], metrics: Iterable[str], start: datetime, end: datetime) -> dict:
    """Each GPU's series of each metric in [start, end), oldest first; see the module docstring."""
    gpu_ids, metrics = list(gpu_ids), list(metrics)
    unknown = set(metrics) - set(METRIC_KEYS)
    if unknown:
        raise ValueError(f"unknown metrics: {', '.join(sorted(unknown))}; choose from {', '.join(METRIC_KEYS)}")
    if start >= end:
        raise ValueError("start must be before end")
    resolution = resolution_for(start, end)
    reader = read_raw if resolution == RAW else read_rollup
    columns, rows = reader(resolution, gpu_ids, metrics, start, end)
    return {"resolution": resolution, "gpus": collect(gpu_ids, columns, rows)}


def node_series(node_id: int, metrics: Iterable[str], start: datetime, end: datetime) -> dict:
    """gpu_series of every GPU of a node."""
    gpu_ids = list(GPU.objects.filter(node_id=node_id).order_by("index").values_list("pk", flat=True))
    return gpu_series(gpu_ids, metrics, start, end)


def read_raw(resolution: str, gpu_ids: list[int], metrics: list[str], start: datetime, end: datetime):
    sql = f"""SELECT gpu_id, ts, {", ".join(metrics) or "NULL"} FROM monitoring_gpusample
              WHERE gpu_id = ANY(%s) AND ts >= %s AND ts < %s ORDER BY gpu_id, ts"""
    return metrics, fetch(sql, [gpu_ids, start, end])


def rollup_columns(metrics: list[str]) -> list[str]:
    return [column for column in ROLLUP_COLUMNS if column.rsplit("_", 1)[0] in metrics]


def read_rollup(resolution: str, gpu_ids: list[int], metrics: list[str], start: datetime, end: datetime):
    """Stored buckets up to where the rollup is done, then the rest aggregated from the finer table."""
    columns = rollup_columns(metrics) or ["samples"]
    table, finer, time_column, expression = {
        MINUTE: ("monitoring_gpuminute", "monitoring_gpusample", "ts", minute_expression),
        HOUR: ("monitoring_gpuhour", "monitoring_gpuminute", "bucket", hour_expression),
    }[resolution]
    done = RollupProgress.objects.filter(table=resolution).values_list("done_until", flat=True).first()
    done = min(max(done or start, start), end)
    sql = f"""
        SELECT gpu_id, bucket, {", ".join(columns)} FROM {table}
        WHERE gpu_id = ANY(%s) AND bucket >= %s AND bucket < %s
        UNION ALL
        SELECT gpu_id, date_trunc('{resolution}', {time_column}, 'UTC'), {", ".join(map(expression, columns))}
        FROM {finer} WHERE gpu_id = ANY(%s) AND {time_column} >= %s AND {time_column} < %s
        GROUP BY 1, 2
        ORDER BY 1, 2"""
    return columns, fetch(sql, [gpu_ids, start, done, gpu_ids, done, end])


def fetch(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def collect(gpu_ids: list[int], columns: list[str], rows: list[tuple]) -> dict:
    series = {gpu_id: {"ts": [], **{name(column): [] for column in columns}} for gpu_id in gpu_ids}
    for gpu_id, ts, *values in rows:
        gpu = series[gpu_id]
        gpu["ts"].append(ts)
        for column, value in zip(columns, values, strict=True):
            gpu[name(column)].append(value)
    return series


def name(column: str) -> str:
    """A rollup column's name in the result: the metric itself for its main aggregate."""
    key, _, aggregate = column.rpartition("_")
    if key in METRIC_KEYS and (aggregate == "avg" or column in ("ecc_volatile_max", "clocks_event_reasons_any")):
        return key
    return column
