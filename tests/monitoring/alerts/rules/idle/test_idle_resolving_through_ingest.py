"""Resolving idle-process alerts right after they open, through the real ingest and the real evaluation.

Y = 5 %, margin 5 points: one reading at 10 % or more resolves an open alert at once. Readings every 10 s,
one frame a minute, the evaluation at each minute's end (tests/support/replay.py).
"""

import pytest

from monitoring.alerts.choices import AlertStatus
from tests.support.monitoring import T0
from tests.support.replay import Replay, gpu_reading, idle_alerts, notebook

pytestmark = pytest.mark.django_db(transaction=True)

START = T0.timestamp()
STARTED = START - 86400  # the notebook has run since yesterday


@pytest.fixture(autouse=True)
def thresholds(settings):
    settings.ALERT_IDLE_MAX_UTIL_PCT = 5
    settings.ALERT_RESOLVE_UTIL_MARGIN_PCT = 5
    settings.ALERT_IDLE_WINDOW_MIN = 10
    settings.ALERT_RESOLVE_WINDOW_MIN = 5


@pytest.fixture
async def replay(agent, clock):
    await agent.start(gpus=1)
    yield Replay(agent, clock, START)
    await agent.stop()


def utilization(values: dict[int, float], sm_util=0):
    """The notebook idle at 0 %, except the readings named (index since the start → GPU utilization)."""
    return lambda i, ts: gpu_reading(ts, values.get(i, 0), [notebook(8000, sm_util, started_at=STARTED)])


async def test_readings_of_16_then_12_percent_right_after_opening_resolve_the_alert(replay):
    await replay.minutes(11, utilization({}))
    (alert,) = await idle_alerts()
    assert alert.status == AlertStatus.OPEN
    first = replay.minute * 6
    await replay.minutes(1, utilization({first: 16, first + 1: 12}))
    (alert,) = await idle_alerts()
    assert alert.status == AlertStatus.RESOLVED and alert.resolution == "The process is working again."


async def test_readings_from_before_the_opening_do_not_resolve_it(replay, settings):
    settings.ALERT_IDLE_WINDOW_MIN = 1  # shorter than the 5-minute resolve window
    light = {i: 20 for i in range(3 * 6)}  # 20 %: over Y + margin, under real work (30 %), so still forgotten
    await replay.minutes(4, utilization(light))
    (alert,) = await idle_alerts()
    assert alert.status == AlertStatus.OPEN  # opened at minute 4, its 1-minute window at 0 %
    await replay.minutes(1, utilization({}))

    def unknown(i, ts):  # a minute of null utilization: not idle over the window, and no reading at all
        return gpu_reading(ts, None, [notebook(8000, None, started_at=STARTED)])

    await replay.minutes(1, unknown)
    (alert,) = await idle_alerts()
    assert alert.status == AlertStatus.OPEN, alert.resolution
