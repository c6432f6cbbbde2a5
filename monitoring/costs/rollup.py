"""Roll process samples up into GPU time per GPU, OS user and hour, priced at the rate in force.

Each process sample stands for one sampling interval of GPU time (the interval the server gives the
agents); two processes of one user on one GPU at one instant count once. The current and the previous
hour are recomputed on every run, which covers every sample an agent may still replay (the ingest
refuses samples older than an hour).
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from fleet.owners import owners_by_os_username
from monitoring.alerts.attribution import Attribution
from monitoring.costs.models import UsageHour
from monitoring.costs.rates import price, rates_by_gpu

HOUR = timedelta(hours=1)

# One row per (GPU, instant, OS user) first, so two processes of one user count once; then hash-join the
# GPU's sample of that instant. Scanning the hours' partitions beats walking the (gpu, ts) index: rows
# lie in time order, so an index walk per GPU reads the heap at random.
USAGE_SQL = """
WITH instants AS (
    SELECT p.gpu_id, p.ts, p.os_user, max(p.mem_used_mib) AS memory
    FROM monitoring_processsample p
    WHERE p.ts >= %(start)s AND p.ts < %(end)s
    GROUP BY p.gpu_id, p.ts, p.os_user
)
SELECT i.gpu_id, date_trunc('hour', i.ts, 'UTC') AS bucket, i.os_user, count(*) AS samples,
       count(*) FILTER (WHERE g.util_gpu < %(util)s AND i.memory >= %(memory)s) AS idle
FROM instants i
LEFT JOIN monitoring_gpusample g
       ON g.gpu_id = i.gpu_id AND g.ts = i.ts AND g.ts >= %(start)s AND g.ts < %(end)s
GROUP BY 1, 2, 3
"""


def floor_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def measured_usage(start: datetime, end: datetime) -> list[tuple]:
    params = {
        "start": start,
        "end": end,
        "util": settings.ALERT_IDLE_MAX_UTIL_PCT,
        "memory": settings.ALERT_IDLE_MIN_MEMORY_MIB,
    }
    with connection.cursor() as cursor:
        cursor.execute(USAGE_SQL, params)
        return cursor.fetchall()


def rollup_usage(now: datetime | None = None, hours: int = 2) -> int:
    """Recompute the usage rows of the last `hours` hours (the current one included); returns rows written."""
    now = now or timezone.now()
    start = floor_hour(now) - timedelta(hours=hours - 1)
    rows = measured_usage(start, now)
    owners = owners_by_os_username({os_user for _, _, os_user, _, _ in rows})
    uses = Attribution({gpu_id for gpu_id, *_ in rows}, {u.id for u in owners.values()}, start, now)
    rates = rates_by_gpu({gpu_id for gpu_id, *_ in rows})
    interval = settings.AGENT_INTERVAL_S
    usage = []
    for gpu_id, bucket, os_user, samples, idle in rows:
        owner = owners.get(os_user)
        project_id, _ = uses.of(gpu_id, owner.id if owner else None, bucket, bucket + HOUR)
        seconds, idle_seconds, rate = samples * interval, idle * interval, rates.get(gpu_id)
        usage.append(
            UsageHour(
                gpu_id=gpu_id,
                bucket=bucket,
                os_user=os_user,
                user=owner,
                project_id=project_id,
                gpu_seconds=seconds,
                idle_seconds=idle_seconds,
                rate=rate,
                cost=price(seconds, rate),
                idle_cost=price(idle_seconds, rate),
            )
        )
    with transaction.atomic():
        UsageHour.objects.bulk_create(
            usage,
            update_conflicts=True,
            unique_fields=["gpu", "bucket", "os_user"],
            update_fields=["user", "project", "gpu_seconds", "idle_seconds", "rate", "cost", "idle_cost"],
        )
    return len(usage)
