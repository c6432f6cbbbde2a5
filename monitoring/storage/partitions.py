"""Daily partitions of the raw sample tables: made ahead by beat, on demand by the ingest, dropped by retention.

A partition is created standalone and then attached: ATTACH takes only a SHARE UPDATE EXCLUSIVE
lock on the parent, so inserts and reads carry on while the next day's partition appears
(CREATE TABLE ... PARTITION OF would take an ACCESS EXCLUSIVE one).
"""

import logging
import re
import threading
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta

from django.db import connection, transaction

log = logging.getLogger(__name__)

TABLES = ("monitoring_gpusample", "monitoring_processsample")
NAME = re.compile(r"_p(\d{8})$")
LOCK_KEY = 0x6670_6172  # pg_advisory_xact_lock key: one partition maker at a time across processes
LOCK_TIMEOUT = "2s"


def partition_name(table: str, day: date) -> str:
    return f"{table}_p{day:%Y%m%d}"


def day_start(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def existing_days(cursor, table: str) -> set[date]:
    cursor.execute(
        """SELECT child.relname FROM pg_inherits
           JOIN pg_class child ON child.oid = pg_inherits.inhrelid
           JOIN pg_class parent ON parent.oid = pg_inherits.inhparent
           WHERE parent.relname = %s""",
        [table],
    )
    days = set()
    for (name,) in cursor.fetchall():
        if match := NAME.search(name):
            days.add(datetime.strptime(match.group(1), "%Y%m%d").date())
    return days


def create_missing(days: Iterable[date]) -> list[str]:
    """Create the partitions of days that do not exist yet, for every raw table; returns their names."""
    days = set(days)
    created = []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        for table in TABLES:
            for day in sorted(days - existing_days(cursor, table)):
                created.append(attach(cursor, table, day))
    if created:
        log.info("created partitions %s", ", ".join(created))
    return created


def attach(cursor, table: str, day: date) -> str:
    name = partition_name(table, day)
    low, high = day_start(day).isoformat(), day_start(day + timedelta(days=1)).isoformat()
    cursor.execute(f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
    cursor.execute(f"ALTER TABLE {table} ATTACH PARTITION {name} FOR VALUES FROM ('{low}') TO ('{high}')")
    return name


def drop_before(cutoff: datetime) -> list[str]:
    """Drop the partitions whose whole day ends at or before cutoff; returns their names."""
    dropped = []
    for table in TABLES:
        with connection.cursor() as cursor:
            days = existing_days(cursor, table)
        for day in sorted(days):
            if day_start(day + timedelta(days=1)) <= cutoff:
                with transaction.atomic(), connection.cursor() as cursor:
                    cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                    cursor.execute(f"DROP TABLE {partition_name(table, day)}")
                dropped.append(partition_name(table, day))
    PARTITIONS.forget(day for day in list(PARTITIONS.known) if day_start(day + timedelta(days=1)) <= cutoff)
    return dropped


def oldest_partition(table: str) -> str | None:
    with connection.cursor() as cursor:
        days = existing_days(cursor, table)
    return partition_name(table, min(days)) if days else None


class KnownPartitions:
    """The days this process knows have partitions, so a flush asks PostgreSQL only on a new day."""

    def __init__(self):
        self.known: set[date] = set()
        self._lock = threading.Lock()

    def ensure(self, days: Iterable[date]) -> None:
        missing = set(days) - self.known
        if not missing:
            return
        create_missing(missing)
        with self._lock:
            self.known |= missing

    def forget(self, days: Iterable[date] = ()) -> None:
        with self._lock:
            self.known -= set(days)

    def reset(self) -> None:
        with self._lock:
            self.known.clear()


PARTITIONS = KnownPartitions()
