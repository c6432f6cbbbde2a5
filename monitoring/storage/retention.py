"""Retention: raw samples 48 h, 1-minute rollups 90 days, hourly forever (settings FLEET_*_RETENTION_*).

Whole expired days of raw samples go by dropping their partition; the rest is deleted in chunks of
CHUNK_ROWS, one short transaction each, so no run holds a lock for long. Nothing is deleted before
it is rolled up: the cutoffs never pass the rollups' progress.
"""

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from monitoring.storage import partitions
from monitoring.storage.models import RollupProgress

log = logging.getLogger(__name__)

CHUNK_ROWS = 10_000
MAX_CHUNKS_PER_TABLE = 200


@dataclass
class Report:
    dropped: list[str] = field(default_factory=list)
    deleted: dict[str, int] = field(default_factory=dict)


def enforce_retention(now: datetime | None = None) -> Report:
    now = now or timezone.now()
    report = Report()
    done = dict(RollupProgress.objects.values_list("table", "done_until"))
    raw_cutoff = capped(now - timedelta(hours=settings.FLEET_RAW_RETENTION_HOURS), done.get("minute"))
    if raw_cutoff is not None:
        report.dropped = partitions.drop_before(raw_cutoff)
        for table in partitions.TABLES:
            report.deleted[table] = delete_raw(table, raw_cutoff)
    minute_cutoff = capped(now - timedelta(days=settings.FLEET_MINUTE_RETENTION_DAYS), done.get("hour"))
    if minute_cutoff is not None:
        report.deleted["monitoring_gpuminute"] = delete_buckets("monitoring_gpuminute", minute_cutoff)
    if settings.FLEET_HOUR_RETENTION_DAYS:
        hour_cutoff = now - timedelta(days=settings.FLEET_HOUR_RETENTION_DAYS)
        report.deleted["monitoring_gpuhour"] = delete_buckets("monitoring_gpuhour", hour_cutoff)
    log.info("retention: dropped %s, deleted %s", report.dropped or "no partitions", report.deleted)
    return report


def capped(cutoff: datetime, rolled_up_until: datetime | None) -> datetime | None:
    """The cutoff, held back to what the next table has already rolled up (None: nothing rolled up yet)."""
    if rolled_up_until is None:
        return None
    return min(cutoff, rolled_up_until)


def delete_raw(table: str, cutoff: datetime) -> int:
    """Delete the expired rows of partitions that straddle the cutoff (whole days were dropped)."""
    with connection.cursor() as cursor:
        days = sorted(partitions.existing_days(cursor, table))
    names = [partitions.partition_name(table, day) for day in days if partitions.day_start(day) < cutoff]
    # ctid: a partition has no single-column key; the BRIN index on ts finds the expired pages.
    return sum(
        delete_in_chunks(
            f"DELETE FROM {name} WHERE ctid = ANY(ARRAY(SELECT ctid FROM {name} WHERE ts < %s LIMIT %s))", cutoff
        )
        for name in names
    )


def delete_buckets(table: str, cutoff: datetime) -> int:
    return delete_in_chunks(
        f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE bucket < %s ORDER BY bucket LIMIT %s)", cutoff
    )


def delete_in_chunks(sql: str, cutoff: datetime) -> int:
    total = 0
    for _ in range(MAX_CHUNKS_PER_TABLE):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [cutoff, CHUNK_ROWS])
            deleted = cursor.rowcount
        total += deleted
        if deleted < CHUNK_ROWS:
            break
    return total
