"""Idle-process alerts on noisy telemetry, replayed through the real ingest: no flapping, unknown is not idle.

A 10-minute idle window and the default 5-minute resolve window; readings every 10 s, one frame a minute.
"""

import pytest

from monitoring.alerts.choices import AlertStatus
from tests.support.monitoring import T0
from tests.support.replay import Replay, gpu_reading, idle_alerts, notebook

pytestmark = pytest.mark.django_db(transaction=True)

START = T0.timestamp()
STARTED = START - 86400  # the notebook has run since yesterday


@pytest.fixture(autouse=True)
def ten_minute_window(settings):
    settings.ALERT_IDLE_WINDOW_MIN = 10
    settings.ALERT_RESOLVE_WINDOW_MIN = 5


@pytest.fixture
async def replay(agent, clock):
    await agent.start(gpus=1)
    yield Replay(agent, clock, START)
    await agent.stop()


def idle(memory, util=0, listed=True):
    return lambda i, ts: gpu_reading(ts, util, [notebook(memory(i), started_at=STARTED)] if listed else None)


async def test_memory_hovering_around_the_threshold_for_an_hour_raises_at_most_one_alert(replay):
    hovering = idle(lambda i: 1000 + (i * 37) % 101)  # 1,000-1,100 MiB against 1,024
    await replay.minutes(60, hovering, evaluate_every=2)
    assert len(await idle_alerts()) <= 1


async def test_a_null_memory_reading_in_twenty_neither_resolves_nor_reopens(replay):
    def at(i, ts):
        unknown = i % 20 == 19  # lands on a minute's last reading now and then: the latest state is null
        return gpu_reading(ts, None if unknown else 0, [notebook(None if unknown else 8000, started_at=STARTED)])

    await replay.minutes(40, at, evaluate_every=2)
    (alert,) = await idle_alerts()
    assert alert.status == AlertStatus.OPEN


async def test_a_missing_process_list_now_and_then_keeps_one_alert(replay):
    def at(i, ts):
        return gpu_reading(ts, 0, None if i % 13 == 0 else [notebook(8000, started_at=STARTED)])

    await replay.minutes(40, at, evaluate_every=2)
    (alert,) = await idle_alerts()
    assert alert.status == AlertStatus.OPEN


async def test_memory_below_the_threshold_earlier_in_the_window_raises_nothing(replay):
    reload_at = 12 * 6  # the model loads at minute 12: 0 -> 3.8 GiB
    await replay.minutes(21, idle(lambda i: 0 if i < reload_at else 3891))
    assert await idle_alerts() == []
    await replay.minutes(3, idle(lambda i: 3891))  # ten minutes after the load it counts
    (alert,) = await idle_alerts()
    assert alert.details["mem_used_mib"] == 3891


async def test_a_gpu_that_stops_reporting_inside_the_window_raises_no_idle_alert(replay, settings):
    settings.ALERT_IDLE_WINDOW_MIN = 1
    await replay.minutes(3, idle(lambda i: 8000, util=90))
    quiet = replay.minute * 6 + 6  # busy one more minute, then two idle readings (12 s) and silence

    def at(i, ts):
        return gpu_reading(ts, 90 if i < quiet else 0, [notebook(8000, started_at=STARTED)]) if i < quiet + 2 else None

    await replay.minutes(8, at)
    assert await idle_alerts() == []


async def test_an_open_alert_whose_gpu_goes_silent_ends_as_no_data(replay, settings):
    settings.ALERT_NO_DATA_MIN = 10
    await replay.minutes(12, idle(lambda i: 8000))
    (alert,) = await idle_alerts()
    await replay.minutes(8, lambda i, ts: None)
    assert (await idle_alerts())[0].status == AlertStatus.OPEN  # 8 min of silence: unknown, still open
    await replay.minutes(3, lambda i, ts: None)
    (alert,) = await idle_alerts()
    assert alert.status == AlertStatus.RESOLVED and alert.resolution.startswith("No data")


async def test_one_busy_sample_after_unknown_readings_resolves_the_alert(replay):
    await replay.minutes(12, idle(lambda i: 8000))
    assert len(await idle_alerts()) == 1
    first_busy = replay.minute * 6 + 3 * 6 + 2  # three minutes of null utilization, then one reading at 95 %

    def at(i, ts):
        util = None if i < first_busy else 95 if i == first_busy else 0
        return gpu_reading(ts, util, [notebook(8000, started_at=STARTED)])

    await replay.minutes(4, at)
    (alert,) = await idle_alerts()
    assert alert.status == AlertStatus.RESOLVED and alert.resolution == "The process is working again."
