"""1-minute rollups from raw samples and 1-hour rollups from the minutes, over closed buckets only.

Each run upserts (INSERT ... SELECT ... GROUP BY ... ON CONFLICT DO UPDATE) the buckets from where
the last run stopped up to the last closed one, so running twice is harmless. A replay that fills
in a bucket already done leaves a `late_since` mark (the ingest sets it in the flush's transaction);
the next run starts there. Hours are only rolled up once every minute in them is.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from monitoring.storage import partitions
from monitoring.storage.columns import ROLLUP_COLUMNS
from monitoring.storage.models import RollupProgress

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
# Samples of a minute that closed this long ago have arrived (an agent sends every interval).
SETTLE = timedelta(seconds=5)
# One run does at most this much, so catching up after downtime is spread over several runs.
MAX_MINUTE_SPAN = timedelta(hours=24)
MAX_HOUR_SPAN = timedelta(days=7)


def metric_of(column: str) -> tuple[str, str]:
    key, aggregate = column.rsplit("_", 1)
    return key, aggregate


def minute_expression(column: str) -> str:
    key, aggregate = metric_of(column)
    return f"bit_or({key})" if aggregate == "any" else f"{aggregate}({key})"


def hour_expression(column: str) -> str:
    key, aggregate = metric_of(column)
    if aggregate == "avg":
        # Weighted by the minute's sample count (exact unless a metric was N/A for part of a minute).
        return f"sum({column} * samples) / nullif(sum(samples) FILTER (WHERE {column} IS NOT NULL), 0)"
    return f"bit_or({column})" if aggregate == "any" else f"{aggregate}({column})"


def upsert_sql(target: str, source: str, time_column: str, unit: str, count: str, expression) -> str:
    columns = ", ".join(ROLLUP_COLUMNS)
    updates = ", ".join(f"{column} = EXCLUDED.{column}" for column in ["samples", *ROLLUP_COLUMNS])
    return f"""
        INSERT INTO {target} (gpu_id, bucket, samples, {columns})
        SELECT gpu_id, date_trunc('{unit}', {time_column}, 'UTC'), {count},
               {", ".join(expression(column) for column in ROLLUP_COLUMNS)}
        FROM {source} WHERE {time_column} >= %s AND {time_column} < %s
        GROUP BY 1, 2
        ON CONFLICT (gpu_id, bucket) DO UPDATE SET {updates}
    """


MINUTES_FROM_SAMPLES = upsert_sql(
    "monitoring_gpuminute", "monitoring_gpusample", "ts", "minute", "count(*)", minute_expression
)
HOURS_FROM_MINUTES = upsert_sql(
    "monitoring_gpuhour", "monitoring_gpuminute", "bucket", "hour", "sum(samples)", hour_expression
)


def floor_to(moment: datetime, step: timedelta) -> datetime:
    epoch = datetime(1970, 1, 1, tzinfo=moment.tzinfo)
    return moment - (moment - epoch) % step


def progress(table: str) -> RollupProgress:
    RollupProgress.objects.get_or_create(table=table)
    return RollupProgress.objects.select_for_update().get(table=table)


def window(state: RollupProgress, first: datetime, last: datetime, step: timedelta, span: timedelta):
    """The buckets this run computes: from where the last stopped (or the late mark) up to last."""
    start = state.done_until or first
    if state.late_since is not None:
        start = min(start, floor_to(state.late_since, step))
    start = floor_to(start, step)
    return start, max(start, min(last, start + span))


def finish(state: RollupProgress, start: datetime, end: datetime, now: datetime) -> None:
    previous = state.done_until
    if state.late_since is not None and state.late_since >= start:
        # A capped run that stopped short of where the table was done picks up from there next time.
        state.late_since = end if previous is not None and end < previous else None
    state.done_until = max(end, previous or end)
    state.last_run_at, state.last_error = now, ""
    state.save()


@transaction.atomic
def rollup_minutes(now: datetime | None = None) -> int:
    """Roll up closed minutes; returns how many (GPU, minute) rows were written."""
    now = now or timezone.now()
    state = progress("minute")
    first = max(now - timedelta(hours=settings.FLEET_RAW_RETENTION_HOURS), oldest_raw_day(now))
    start, end = window(state, first, floor_to(now - SETTLE, MINUTE), MINUTE, MAX_MINUTE_SPAN)
    written = execute(MINUTES_FROM_SAMPLES, start, end)
    hours = progress("hour")
    if hours.done_until is not None and start < hours.done_until:
        hours.late_since = min(start, hours.late_since or start)
        hours.save(update_fields=["late_since"])
    finish(state, start, end, now)
    return written


@transaction.atomic
def rollup_hours(now: datetime | None = None) -> int:
    """Roll up the hours whose minutes are all rolled up; returns how many (GPU, hour) rows were written."""
    now = now or timezone.now()
    minutes = progress("minute")
    state = progress("hour")
    if minutes.done_until is None:
        return 0
    first = max(now - timedelta(days=settings.FLEET_MINUTE_RETENTION_DAYS), oldest_minute(now))
    start, end = window(state, first, floor_to(minutes.done_until, HOUR), HOUR, MAX_HOUR_SPAN)
    written = execute(HOURS_FROM_MINUTES, start, end)
    finish(state, start, end, now)
    return written


def oldest_raw_day(now: datetime) -> datetime:
    """Where a first run starts: the oldest day with a partition (the ingest makes them as data arrives)."""
    with connection.cursor() as cursor:
        days = partitions.existing_days(cursor, "monitoring_gpusample")
    return partitions.day_start(min(days)) if days else now


def oldest_minute(now: datetime) -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT min(bucket) FROM monitoring_gpuminute")
        return cursor.fetchone()[0] or now


def execute(sql: str, start: datetime, end: datetime) -> int:
    if start >= end:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(sql, [start, end])
        return cursor.rowcount


def record_failure(table: str, error: Exception) -> None:
    RollupProgress.objects.update_or_create(
        table=table, defaults={"last_error": f"{type(error).__name__}: {error}"[:2000], "last_run_at": timezone.now()}
    )
