"""1-minute and 1-hour rollups: min, avg and max over closed buckets, late samples folded in, reruns harmless."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from monitoring.agent.metrics import METRIC_KEYS
from monitoring.ingest.validation import Sample
from monitoring.ingest.writer import Frame, GPURef, write_frames
from monitoring.storage.models import GPUHour, GPUMinute, RollupProgress
from monitoring.storage.rollups import rollup_hours, rollup_minutes
from tests.monitoring.ingest.storage import make_gpus, store

pytestmark = pytest.mark.django_db

NOW = datetime(2030, 3, 10, 12, 0, 30, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


def minutes(gpu) -> dict:
    return {m.bucket: m for m in GPUMinute.objects.filter(gpu=gpu)}


def test_it_rolls_up_each_closed_minute_with_min_avg_and_max(clock):
    gpu, _ = make_gpus()
    start = datetime(2030, 3, 10, 11, 58, tzinfo=UTC)
    store(gpu, start, 180, util_gpu=lambda i: i % 60, fan_pct=None, clocks_event_reasons=lambda i: 4 if i == 61 else 1)
    rollup_minutes()
    rows = minutes(gpu)
    assert sorted(rows) == [start, start + MINUTE]  # 12:00 is still open
    first = rows[start]
    assert (first.samples, first.util_gpu_min, first.util_gpu_avg, first.util_gpu_max) == (60, 0, 29.5, 59)
    assert (first.fan_pct_min, first.fan_pct_avg, first.fan_pct_max) == (None, None, None)
    assert rows[start + MINUTE].clocks_event_reasons_any == 5
    assert RollupProgress.objects.get(table="minute").done_until == datetime(2030, 3, 10, 12, 0, tzinfo=UTC)


def test_rolling_up_again_changes_nothing(clock):
    gpu, _ = make_gpus()
    store(gpu, NOW - 10 * MINUTE, 300, util_gpu=50)
    rollup_minutes()
    before = list(GPUMinute.objects.order_by("bucket").values())
    rollup_minutes()
    assert list(GPUMinute.objects.order_by("bucket").values()) == before


def test_a_sample_replayed_into_a_finished_minute_is_folded_in_on_the_next_run(clock):
    gpu, _ = make_gpus()
    minute = datetime(2030, 3, 10, 11, 50, tzinfo=UTC)
    store(gpu, minute, 30, step=timedelta(seconds=2), util_gpu=10)
    rollup_minutes()
    assert minutes(gpu)[minute].samples == 30
    late_sample(gpu, minute + timedelta(seconds=1), 100)
    assert RollupProgress.objects.get(table="minute").late_since == minute + timedelta(seconds=1)
    rollup_minutes()
    row = minutes(gpu)[minute]
    assert (row.samples, row.util_gpu_max) == (31, 100)
    assert RollupProgress.objects.get(table="minute").late_since is None


def late_sample(gpu, ts: datetime, util_gpu: float) -> None:
    """Store one sample the way the ingest does, after its minute was rolled up."""
    sample = Sample(gpu.uuid, ts.timestamp(), (util_gpu,) + (None,) * (len(METRIC_KEYS) - 1), None)
    ref = GPURef(gpu.pk, gpu.uuid, 0, "gpu-01", None)
    write_frames([Frame(gpu.node_id, "s", "b", 1, [(ref, sample)])], timezone.now())


def test_an_hour_is_rolled_up_from_its_minutes_weighted_by_their_samples(clock):
    gpu, _ = make_gpus()
    hour = datetime(2030, 3, 10, 10, tzinfo=UTC)
    store(gpu, hour, 3600, util_gpu=30, temp_c=lambda i: 40 + i % 3)
    store(gpu, hour + timedelta(hours=1), 20, step=timedelta(seconds=3), util_gpu=90)
    store(gpu, hour + timedelta(hours=1, minutes=30), 60, util_gpu=30)
    rollup_minutes()
    rollup_hours()
    hours = {h.bucket: h for h in GPUHour.objects.filter(gpu=gpu)}
    assert sorted(hours) == [hour, hour + timedelta(hours=1)]
    first, second = hours[hour], hours[hour + timedelta(hours=1)]
    assert (first.samples, first.util_gpu_avg, first.temp_c_min, first.temp_c_max) == (3600, 30, 40, 42)
    assert second.samples == 80
    assert second.util_gpu_avg == pytest.approx((20 * 90 + 60 * 30) / 80)


def test_a_late_sample_reaches_the_hour_through_its_minute(clock):
    gpu, _ = make_gpus()
    hour = datetime(2030, 3, 10, 11, tzinfo=UTC)
    store(gpu, hour, 60, util_gpu=30)
    rollup_minutes()
    rollup_hours()
    late_sample(gpu, hour + timedelta(minutes=45), 100)
    rollup_minutes()
    rollup_hours()
    row = GPUHour.objects.get(gpu=gpu, bucket=hour)
    assert (row.samples, row.util_gpu_max) == (61, 100)
    assert RollupProgress.objects.get(table="hour").late_since is None


def test_hours_wait_for_their_minutes(clock):
    gpu, _ = make_gpus()
    store(gpu, NOW - timedelta(minutes=30), 60, util_gpu=1)
    assert rollup_hours() == 0
    rollup_minutes()
    rollup_hours()
    assert not GPUHour.objects.filter(bucket=datetime(2030, 3, 10, 12, tzinfo=UTC)).exists()
    assert GPUHour.objects.filter(bucket=datetime(2030, 3, 10, 11, tzinfo=UTC)).count() == 1
