"""Retention: raw samples 48 h (whole days dropped, the rest deleted in chunks), minutes 90 days, hours forever."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test import override_settings

from monitoring.storage import partitions, retention
from monitoring.storage.models import GPUHour, GPUMinute, GPUSample, RollupProgress
from monitoring.storage.retention import enforce_retention
from monitoring.storage.rollups import rollup_hours, rollup_minutes
from tests.monitoring.ingest.storage import make_gpus, store

# Retention commits chunk by chunk and drops partitions, as it does in production.
pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2030, 3, 10, 12, 0, 30, tzinfo=UTC)


def days(table: str = "monitoring_gpusample") -> list:
    with connection.cursor() as cursor:
        return sorted(partitions.existing_days(cursor, table))


@pytest.fixture
def gpu():
    return make_gpus(1)[0]


@pytest.fixture
def history(gpu):
    """One sample a minute for the last 4 days, all rolled up."""
    with time_machine.travel(NOW - timedelta(days=4), tick=False):
        store(gpu, NOW - timedelta(days=4), 4 * 24 * 60, step=timedelta(minutes=1), util_gpu=50)
    with time_machine.travel(NOW, tick=False):
        RollupProgress.objects.create(table="minute", done_until=NOW - timedelta(days=4))
        while rollup_minutes():
            pass
        rollup_hours()
    return gpu


def test_raw_samples_older_than_48_hours_go_and_whole_days_are_dropped(history):
    assert [day for day in days() if day.year == 2030] == [datetime(2030, 3, d).date() for d in (6, 7, 8, 9, 10)]
    with time_machine.travel(NOW, tick=False):
        report = enforce_retention()
    cutoff = NOW - timedelta(hours=48)
    assert days() == [datetime(2030, 3, d).date() for d in (8, 9, 10)]
    assert days("monitoring_processsample") == days()
    assert "monitoring_gpusample_p20300307" in report.dropped
    oldest = GPUSample.objects.order_by("ts").first().ts
    assert cutoff <= oldest < cutoff + timedelta(minutes=1)
    assert GPUSample.objects.count() == 2 * 24 * 60
    assert GPUMinute.objects.filter(bucket__lt=cutoff).exists()


def test_raw_samples_are_deleted_in_chunks(history, monkeypatch):
    monkeypatch.setattr(retention, "CHUNK_ROWS", 50)
    statements = []
    with (
        time_machine.travel(NOW, tick=False),
        connection.execute_wrapper(lambda run, sql, *a: statements.append(sql) or run(sql, *a)),
    ):
        enforce_retention()
    deletes = [sql for sql in statements if sql.startswith("DELETE FROM monitoring_gpusample_p")]
    assert len(deletes) == 12 * 60 // 50 + 1
    assert GPUSample.objects.filter(ts__lt=NOW - timedelta(hours=48)).count() == 0


def test_raw_samples_that_are_not_rolled_up_are_kept(gpu):
    with time_machine.travel(NOW - timedelta(days=3), tick=False):
        store(gpu, NOW - timedelta(days=3), 60, step=timedelta(minutes=1), util_gpu=1)
    with time_machine.travel(NOW, tick=False):
        enforce_retention()  # no rollup has run yet
    assert GPUSample.objects.count() == 60


def test_minutes_older_than_90_days_go_and_hours_stay(gpu):
    old = NOW - timedelta(days=91)
    GPUMinute.objects.create(gpu=gpu, bucket=old, samples=1)
    GPUMinute.objects.create(gpu=gpu, bucket=NOW - timedelta(days=89), samples=1)
    GPUHour.objects.create(gpu=gpu, bucket=old - timedelta(days=900), samples=1)
    RollupProgress.objects.create(table="minute", done_until=NOW)
    RollupProgress.objects.create(table="hour", done_until=NOW)
    with time_machine.travel(NOW, tick=False):
        enforce_retention()
    assert list(GPUMinute.objects.values_list("bucket", flat=True)) == [NOW - timedelta(days=89)]
    assert GPUHour.objects.count() == 1


@override_settings(FLEET_HOUR_RETENTION_DAYS=365)
def test_hours_can_be_given_a_retention_too(gpu):
    GPUHour.objects.create(gpu=gpu, bucket=NOW - timedelta(days=400), samples=1)
    GPUHour.objects.create(gpu=gpu, bucket=NOW - timedelta(days=300), samples=1)
    with time_machine.travel(NOW, tick=False):
        enforce_retention()
    assert list(GPUHour.objects.values_list("bucket", flat=True)) == [NOW - timedelta(days=300)]
