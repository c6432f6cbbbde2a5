"""/api/gpus/<uuid>/series/: a GPU's metrics over a range, from raw samples or rollups."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import GPU, Node
from monitoring.live.charts import gpu_series
from monitoring.storage.models import GPUHour, GPUMinute, GPUSample, RollupProgress
from tests.monitoring.live.conftest import store_samples


@pytest.fixture
def gpu(db):
    return GPU.objects.create(node=Node.objects.create(hostname="gpu-01"), index=0, uuid="GPU-series")


@pytest.fixture
def now():
    return timezone.now().replace(second=30, microsecond=0)


def samples(gpu, now, seconds_ago: list[int], **values) -> None:
    store_samples(
        [
            GPUSample(gpu=gpu, ts=now - timedelta(seconds=s), util_gpu=values.get("util_gpu", 100 - s), power_w=200.0)
            for s in seconds_ago
        ]
    )


def rollup(model, gpu, bucket, util: float) -> None:
    model.objects.create(gpu=gpu, bucket=bucket, samples=60, util_gpu_avg=util, power_w_avg=100.0)


def test_15_minutes_reads_raw_samples_in_time_order(gpu, now):
    samples(gpu, now, [3, 1, 2, 16 * 60])
    series = gpu_series(gpu, ["util_gpu", "power_w"], "15m", now=now)
    assert series["table"] == "raw" and series["live"] is True
    assert series["t"] == [(now - timedelta(seconds=s)).timestamp() for s in (3, 2, 1)]
    assert series["series"] == {"util_gpu": [97, 98, 99], "power_w": [200.0] * 3}


def test_a_gap_in_the_samples_breaks_the_line(gpu, now):
    samples(gpu, now, [300, 299, 2, 1])
    values = gpu_series(gpu, ["util_gpu"], "15m", now=now)["series"]["util_gpu"]
    assert values == [-200, -199, None, 98, 99]


def rolled_up_until(table: str, moment) -> None:
    RollupProgress.objects.update_or_create(table=table, defaults={"done_until": moment})


def test_6_hours_reads_minute_rollups_and_averages_the_minutes_not_rolled_up_yet(gpu, now):
    this_minute = now.replace(second=0)
    rolled_up_until("minute", this_minute - timedelta(minutes=1))
    rollup(GPUMinute, gpu, this_minute - timedelta(minutes=3), 10)
    rollup(GPUMinute, gpu, this_minute - timedelta(minutes=2), 20)
    rollup(GPUMinute, gpu, this_minute - timedelta(hours=7), 99)
    samples(gpu, now, [70, 65, 10, 20], util_gpu=None)
    GPUSample.objects.filter(gpu=gpu).update(util_gpu=40)
    GPUSample.objects.filter(gpu=gpu, ts__gte=this_minute).update(util_gpu=60)
    series = gpu_series(gpu, ["util_gpu"], "6h", now=now)
    assert series["table"] == "minute" and series["step_s"] == 60
    minutes = [this_minute - timedelta(minutes=m) for m in (3, 2, 1, 0)]
    assert series["t"] == [m.timestamp() for m in minutes]
    assert series["series"]["util_gpu"] == [10, 20, 40, 60]


def test_30_days_reads_hour_rollups(gpu, now):
    hour = now.replace(minute=0, second=0)
    rolled_up_until("hour", hour)
    rollup(GPUHour, gpu, hour - timedelta(days=29), 5)
    rollup(GPUHour, gpu, hour - timedelta(days=31), 6)
    series = gpu_series(gpu, ["util_gpu"], "30d", now=now)
    assert series["table"] == "hour" and series["series"]["util_gpu"] == [5]


def test_7_days_reads_hour_rollups_and_the_hours_not_rolled_up_yet_from_minutes(gpu, now):
    hour = now.replace(minute=0, second=0)
    rolled_up_until("hour", hour - timedelta(hours=1))
    rollup(GPUHour, gpu, hour - timedelta(hours=2), 5)
    rollup(GPUMinute, gpu, hour - timedelta(minutes=30), 20)
    rollup(GPUMinute, gpu, hour - timedelta(minutes=20), 40)
    series = gpu_series(gpu, ["util_gpu"], "7d", now=now)
    assert series["t"] == [(hour - timedelta(hours=h)).timestamp() for h in (2, 1)]
    assert series["series"]["util_gpu"] == [5, 30]


def test_the_api_answers_with_the_requested_metrics(client, cast, gpu):
    samples(gpu, timezone.now(), [5, 4])
    client.force_login(cast["teammate"])
    body = client.get("/api/gpus/GPU-series/series/?metrics=power_w&range=15m").json()
    assert list(body["series"]) == ["power_w"] and len(body["t"]) == 2


def test_the_api_defaults_to_every_metric_over_15_minutes(client, cast, gpu):
    client.force_login(cast["owner"])
    body = client.get("/api/gpus/GPU-series/series/").json()
    assert body["range"] == "15m" and "pcie_rx_kib_s" in body["series"] and body["t"] == []


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("range=1y", "range", '"1y" is not a valid choice.'),
        ("metrics=util_gpu,bogus", "metrics", "unknown metric bogus"),
        ("metrics=,", "metrics", "unknown metric (none given)"),
    ],
)
def test_a_bad_query_gets_a_400_saying_what_is_wrong(client, cast, gpu, query, field, message):
    client.force_login(cast["owner"])
    response = client.get(f"/api/gpus/GPU-series/series/?{query}")
    assert response.status_code == 400
    assert message in response.json()["errors"][field][0]


def test_an_unknown_gpu_is_a_404(client, cast, db):
    client.force_login(cast["owner"])
    assert client.get("/api/gpus/GPU-nope/series/").status_code == 404


def test_an_anonymous_caller_is_refused(client, gpu):
    assert client.get("/api/gpus/GPU-series/series/").status_code in (401, 403)
