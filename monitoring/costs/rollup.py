"""Roll process samples up into GPU time per GPU, OS user (and run) and hour, priced at the rate in force.

A process the fleet started counts for its run's owner, any other for the researcher linked to its OS
user (training.owners, the one definition).

Each process sample stands for one sampling interval of GPU time (the interval the server gives the
agents); two processes of one user on one GPU at one instant count once. Every run folds the minutes
closed since the last run into per-minute rows (kept two days), then re-sums the hours those minutes
belong to. Samples an agent replays into minutes already done leave a `late_since` mark (the ingest
sets it in the flush's transaction) and the next run starts there, so each minute is exact.
"""

from datetime import datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from inventory.prices import price, rates_by_gpu
from monitoring.alerts.attribution import Attribution
from monitoring.costs.models import UsageHour, UsageMinute
from monitoring.storage.models import RollupProgress
from training.owners import ProcessOwners

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
# The ingest marks a sample late when it is over a minute old; minutes closed more recently may still fill in.
SETTLE = timedelta(seconds=65)
# The first run starts this far back; a run does at most MAX_SPAN, so catching up is spread over runs.
FIRST_LOOKBACK = timedelta(hours=2)
MAX_SPAN = timedelta(hours=6)
MINUTE_RETENTION = timedelta(days=2)

# One row per (GPU, instant, OS user) first, so two processes of one user count once; then hash-join the
# GPU's sample of that instant. Scanning the minutes' partitions by time beats walking the (gpu, ts)
# index: rows lie in time order, so an index walk per GPU reads the heap at random.
MINUTES_SQL = """
INSERT INTO monitoring_usageminute (gpu_id, bucket, os_user, run_id, samples, idle_samples)
WITH instants AS (
    SELECT p.gpu_id, p.ts, p.os_user, p.run_id, max(p.mem_used_mib) AS memory
    FROM monitoring_processsample p
    WHERE p.ts >= %(start)s AND p.ts < %(end)s
    GROUP BY p.gpu_id, p.ts, p.os_user, p.run_id
)
SELECT i.gpu_id, date_trunc('minute', i.ts, 'UTC'), i.os_user, i.run_id, count(*),
       count(*) FILTER (WHERE g.util_gpu < %(util)s AND i.memory >= %(memory)s)
FROM instants i
LEFT JOIN monitoring_gpusample g
       ON g.gpu_id = i.gpu_id AND g.ts = i.ts AND g.ts >= %(start)s AND g.ts < %(end)s
GROUP BY 1, 2, 3, 4
ON CONFLICT (gpu_id, bucket, os_user, run_id) DO UPDATE
SET samples = EXCLUDED.samples, idle_samples = EXCLUDED.idle_samples
"""

HOURS_SQL = """
SELECT gpu_id, date_trunc('hour', bucket, 'UTC'), os_user, run_id, sum(samples), sum(idle_samples)
FROM monitoring_usageminute
WHERE bucket >= %(start)s AND bucket < %(end)s
GROUP BY 1, 2, 3, 4
"""


def floor_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def floor_minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def progress() -> RollupProgress:
    RollupProgress.objects.get_or_create(table="usage")
    return RollupProgress.objects.select_for_update().get(table="usage")


def window(state: RollupProgress, now: datetime) -> tuple[datetime, datetime]:
    start = state.done_until or floor_hour(now) - FIRST_LOOKBACK + HOUR
    if state.late_since is not None:
        start = min(start, state.late_since)
    start = floor_minute(start)
    return start, max(start, min(floor_minute(now - SETTLE), start + MAX_SPAN))


def fold_minutes(start: datetime, end: datetime) -> None:
    params = {
        "start": start,
        "end": end,
        "util": settings.ALERT_IDLE_MAX_UTIL_PCT,
        "memory": settings.ALERT_IDLE_MIN_MEMORY_MIB,
    }
    with connection.cursor() as cursor:
        cursor.execute(MINUTES_SQL, params)


def hours_of(start: datetime, end: datetime) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(HOURS_SQL, {"start": floor_hour(start), "end": floor_hour(end - MINUTE) + HOUR})
        return cursor.fetchall()


def price_hours(rows: list[tuple], now: datetime) -> list[UsageHour]:
    owners = ProcessOwners({"user": os_user, "run": run_id} for _, _, os_user, run_id, _, _ in rows)
    first = min((bucket for _, bucket, *_ in rows), default=now)
    uses = Attribution({gpu_id for gpu_id, *_ in rows}, {u.id for u in owners.users()}, first, now)
    rates = rates_by_gpu({gpu_id for gpu_id, *_ in rows})
    interval = settings.AGENT_INTERVAL_S
    usage = []
    for gpu_id, bucket, os_user, run_id, samples, idle in rows:
        owner = owners.of({"user": os_user, "run": run_id})
        project_id, _ = uses.of(gpu_id, owner.id if owner else None, bucket, bucket + HOUR, run_id)
        seconds, idle_seconds, rate = samples * interval, idle * interval, rates.get(gpu_id)
        usage.append(
            UsageHour(
                gpu_id=gpu_id,
                bucket=bucket,
                os_user=os_user,
                run_id=run_id,
                user=owner,
                project_id=project_id,
                gpu_seconds=seconds,
                idle_seconds=idle_seconds,
                rate=rate,
                cost=price(seconds, rate),
                idle_cost=price(idle_seconds, rate),
            )
        )
    return usage


@transaction.atomic
def rollup_usage(now: datetime | None = None) -> int:
    """Fold the minutes closed since the last run and re-price their hours; returns hour rows written."""
    now = now or timezone.now()
    state = progress()
    start, end = window(state, now)
    if start >= end:
        return 0
    fold_minutes(start, end)
    usage = price_hours(hours_of(start, end), now)
    UsageHour.objects.bulk_create(
        usage,
        update_conflicts=True,
        unique_fields=["gpu", "bucket", "os_user", "run_id"],
        update_fields=["user", "project", "gpu_seconds", "idle_seconds", "rate", "cost", "idle_cost"],
    )
    # A capped run that stopped short of where the table was done picks up from there next time.
    state.late_since = end if state.done_until and end < state.done_until else None
    state.done_until, state.last_run_at, state.last_error = max(end, state.done_until or end), now, ""
    state.save()
    UsageMinute.objects.filter(bucket__lt=now - MINUTE_RETENTION).delete()
    return len(usage)


@shared_task(name="monitoring.tasks.rollup_usage", ignore_result=True)
def rollup_usage_task() -> int:
    """GPU time per GPU, OS user and hour from process samples (beat, every minute)."""
    return rollup_usage()
