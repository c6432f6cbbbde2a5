"""Beat tasks of telemetry storage (scheduled in settings.CELERY_BEAT_SCHEDULE)."""

from datetime import timedelta

from asgiref.sync import async_to_sync
from celery import shared_task
from django.utils import timezone

from inventory.choices import NodeStatus
from monitoring.ingest import publish
from monitoring.ingest.presence import mark_silent_nodes_offline
from monitoring.storage import partitions, retention, rollups

DAYS_AHEAD = 2


@shared_task(name="monitoring.rollup_minutes")
def rollup_minutes() -> int:
    try:
        return rollups.rollup_minutes()
    except Exception as exc:
        rollups.record_failure("minute", exc)
        raise


@shared_task(name="monitoring.rollup_hours")
def rollup_hours() -> int:
    try:
        return rollups.rollup_hours()
    except Exception as exc:
        rollups.record_failure("hour", exc)
        raise


@shared_task(name="monitoring.enforce_retention")
def enforce_retention() -> dict:
    report = retention.enforce_retention()
    return {"dropped": report.dropped, "deleted": report.deleted}


@shared_task(name="monitoring.prepare_partitions")
def prepare_partitions() -> list[str]:
    """Today's and the next days' partitions, so the ingest rarely has to make one."""
    today = timezone.now().date()
    return partitions.create_missing(today + timedelta(days=n) for n in range(DAYS_AHEAD + 1))


@shared_task(name="monitoring.mark_silent_nodes_offline")
def mark_offline() -> list[str]:
    """The backstop of the ingest's own offline check, for when no ingest process is running."""
    hostnames = mark_silent_nodes_offline()
    for hostname in hostnames:
        async_to_sync(publish.node_status)(hostname, NodeStatus.OFFLINE.value)
    return hostnames
