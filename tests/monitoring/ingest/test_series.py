"""gpu_series reads the coarsest table that covers the range, and reaches the present while rollups lag."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from monitoring.storage.rollups import rollup_hours, rollup_minutes
from monitoring.storage.series import gpu_series, node_series, resolution_for
from tests.monitoring.ingest.storage import make_gpus, store

pytestmark = pytest.mark.django_db

NOW = datetime(2030, 3, 10, 12, 0, 30, tzinfo=UTC)
H = timedelta(hours=1)
D = timedelta(days=1)


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


@pytest.mark.parametrize(
    ("start", "end", "resolution"),
    [
        (NOW - 6 * H, NOW, "raw"),
        (NOW - 47 * H, NOW - 44 * H, "raw"),
        (NOW - 49 * H, NOW - 48 * H, "minute"),  # raw samples are gone by then
        (NOW - 6 * H - timedelta(seconds=1), NOW, "minute"),
        (NOW - 7 * D, NOW, "minute"),
        (NOW - 7 * D - H, NOW, "hour"),
        (NOW - 91 * D, NOW - 90 * D, "hour"),
    ],
)
def test_it_picks_the_coarsest_table_that_covers_the_range(clock, start, end, resolution):
    assert resolution_for(start, end) == resolution


def test_raw_series_hold_every_sample_and_na_as_none(clock):
    gpu, other = make_gpus(2)
    store(gpu, NOW - timedelta(minutes=10), 5, util_gpu=lambda i: 10 * i, fan_pct=None)
    store(other, NOW - timedelta(minutes=10), 3, util_gpu=99)
    series = gpu_series([gpu.pk, other.pk], ["util_gpu", "fan_pct"], NOW - H, NOW)
    assert series["resolution"] == "raw"
    mine = series["gpus"][gpu.pk]
    assert mine["util_gpu"] == [0, 10, 20, 30, 40] and mine["fan_pct"] == [None] * 5
    assert mine["ts"][0] == NOW - timedelta(minutes=10)
    assert series["gpus"][other.pk]["util_gpu"] == [99, 99, 99]


def test_minute_series_carry_min_and_max_and_reach_the_present(clock):
    gpu = make_gpus(1)[0]
    store(gpu, NOW - 2 * D, 2 * 24 * 60 - 3, step=timedelta(minutes=1), util_gpu=lambda i: i % 2 * 100)
    rollup_minutes()  # done up to 12:00
    store(gpu, NOW, 90, util_gpu=50)  # 12:00:30 to 12:01:59, not rolled up yet
    clock.shift(timedelta(minutes=3))
    series = gpu_series([gpu.pk], ["util_gpu", "ecc_volatile"], NOW - 3 * D, NOW + timedelta(minutes=3))
    assert series["resolution"] == "minute"
    mine = series["gpus"][gpu.pk]
    assert set(mine) == {"ts", "util_gpu", "util_gpu_min", "util_gpu_max", "ecc_volatile"}
    assert len(mine["ts"]) == 2 * 24 * 60 - 3 + 2
    assert mine["ts"][-2:] == [datetime(2030, 3, 10, 12, m, tzinfo=UTC) for m in (0, 1)]
    assert mine["util_gpu"][-2:] == [50, 50] and mine["util_gpu"][:2] == [0, 100]
    assert mine["ecc_volatile"][0] is None


def test_hour_series_come_from_the_hourly_rollup(clock):
    gpu = make_gpus(1)[0]
    store(gpu, NOW - 30 * H, 30 * 60, step=timedelta(minutes=1), util_gpu=20)
    rollup_minutes()
    rollup_minutes()  # one run does at most a day
    rollup_hours()
    series = gpu_series([gpu.pk], ["util_gpu"], NOW - 30 * D, NOW)
    assert series["resolution"] == "hour"
    assert len(series["gpus"][gpu.pk]["ts"]) == 30 and set(series["gpus"][gpu.pk]["util_gpu"]) == {20}


def test_node_series_covers_every_gpu_of_the_node(clock):
    gpus = make_gpus(3)
    for gpu in gpus:
        store(gpu, NOW - H, 2, util_gpu=gpu.index)
    series = node_series(gpus[0].node_id, ["util_gpu"], NOW - 2 * H, NOW)
    assert {gpu_id: s["util_gpu"] for gpu_id, s in series["gpus"].items()} == {g.pk: [g.index] * 2 for g in gpus}


def test_it_refuses_unknown_metrics_and_empty_ranges(clock):
    with pytest.raises(ValueError, match="unknown metrics: watts"):
        gpu_series([1], ["watts"], NOW - H, NOW)
    with pytest.raises(ValueError, match="start must be before end"):
        gpu_series([1], ["util_gpu"], NOW, NOW)
