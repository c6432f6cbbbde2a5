"""XID events read back from the samples and the minute rollups: each rise of the counter, with its code."""

from datetime import UTC, datetime, timedelta

import pytest

from inventory.models import GPU, Node
from monitoring.storage.models import GPUMinute, GPUSample
from monitoring.storage.partitions import PARTITIONS
from monitoring.storage.xid_history import XidEvent, xid_events
from tests.support.telemetry import ensure_partitions

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def gpu():
    ensure_partitions(T0, T0)
    yield GPU.objects.create(node=Node.objects.create(hostname="gpu-01"), index=0, uuid="GPU-xid")
    PARTITIONS.reset()  # made in this test's transaction, which is rolled back


def sample(gpu, seconds, count, code):
    GPUSample.objects.create(gpu=gpu, ts=T0 + timedelta(seconds=seconds), xid_count=count, xid_last=code)


def test_each_rise_of_the_counter_is_an_event_with_the_latest_code(gpu):
    for seconds, count, code in [(0, 0, 0), (1, 0, 0), (2, 1, 79), (3, 1, 79), (4, 3, 48), (5, None, None), (6, 0, 0)]:
        sample(gpu, seconds, count, code)
    sample(gpu, 7, 1, 13)  # the agent restarted (count back to 0), then saw one

    events = xid_events(gpu.pk, T0, T0 + timedelta(minutes=1))

    assert events == [
        XidEvent(T0 + timedelta(seconds=2), 1, 79),
        XidEvent(T0 + timedelta(seconds=4), 2, 48),
        XidEvent(T0 + timedelta(seconds=7), 1, 13),
    ]


def test_older_minutes_come_from_the_rollups_and_recent_seconds_from_the_samples(gpu):
    for minute, count, code in [(0, 0, 0), (1, 2, 31), (2, 2, 31)]:
        GPUMinute.objects.create(
            gpu=gpu, bucket=T0 + timedelta(minutes=minute), samples=60, xid_count_max=count, xid_last_max=code
        )
    sample(gpu, 180, 2, 31)
    sample(gpu, 181, 3, 43)

    events = xid_events(gpu.pk, T0, T0 + timedelta(hours=1))

    assert [(e.at - T0, e.errors, e.code) for e in events] == [
        (timedelta(minutes=1), 2, 31),
        (timedelta(seconds=181), 1, 43),
    ]
