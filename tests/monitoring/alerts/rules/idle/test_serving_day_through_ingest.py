"""A day of telemetry through the real ingest: a serving process is underused, a forgotten one alerts once.

GPU 0 serves: 95 % for three minutes every 40 minutes, quiet in between, its weights held all day. GPU 1
holds a notebook at 0 % all day. Samples every 60 s (one reading per minute keeps every minute of the
window measured), one frame every 20 minutes, and beat's work (minute rollup, rules, usage
rollup) at each frame's end: 72 rounds, 10-20 s, for the day the issue names.
"""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model

from inventory.prices import rates_by_gpu
from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind, IdleStretchKind
from monitoring.alerts.models import Alert, IdleStretch
from monitoring.costs import report
from monitoring.costs.rollup import rollup_usage
from monitoring.storage import rollups
from tests.monitoring.ingest.agents import reading
from tests.support.ingest import HOST
from tests.support.monitoring import T0

pytestmark = pytest.mark.django_db(transaction=True)

START = T0.timestamp()
STEP_S = 60
FRAME_MIN = 20  # evaluations at every 40th minute see each quiet stretch just before its burst
DAY_MIN = 24 * 60
CYCLE_MIN, BURST_MIN = 40, 3


@pytest.fixture(autouse=True)
def minute_samples(settings):
    settings.AGENT_INTERVAL_S = float(STEP_S)


def held(pid: int, name: str, util: float) -> list[dict]:
    started = START - 86400
    return [{"pid": pid, "user": "alice", "name": name, "cmdline": name, "mem_used_mib": 60000, "sm_util": util,
             "started_at": started}]  # fmt: skip


def readings(minute: int) -> list[dict]:
    ts = START + minute * 60
    serving = 95 if minute % CYCLE_MIN < BURST_MIN else 0
    return [
        reading(HOST, 0, ts, util_gpu=serving, processes=held(5000, "vllm", serving)),
        reading(HOST, 1, ts, util_gpu=0, processes=held(31337, "python", 0)),
    ]


@database_sync_to_async
def beat_at(minute: int) -> None:
    now = datetime.fromtimestamp(START + minute * 60, tz=UTC)
    rollups.rollup_minutes(now)
    engine.evaluate(now)
    rollup_usage(now)


@database_sync_to_async
def outcome():
    alerts = list(Alert.objects.filter(kind=AlertKind.IDLE_PROCESS))
    alice = get_user_model().objects.get(username="alice")
    month = report.build(alice, None, datetime.fromtimestamp(START + DAY_MIN * 60, tz=UTC))
    stretches = list(IdleStretch.objects.order_by("began"))
    return alerts, month, list(month.underused), stretches, rates_by_gpu({s.gpu_id for s in stretches})


async def test_a_day_of_serving_is_underused_and_a_process_idle_all_day_alerts_once(agent, clock):
    await agent.start(gpus=2)
    try:
        for seq, first in enumerate(range(0, DAY_MIN, FRAME_MIN), start=1):
            clock.move_to(datetime.fromtimestamp(START + (first + FRAME_MIN) * 60, tz=UTC))
            samples = [r for minute in range(first, first + FRAME_MIN) for r in readings(minute)]
            await agent.send({"type": "samples", "seq": seq, "samples": samples})
            assert await agent.receive(timeout=30) == {"type": "ack", "seq": seq}
            await beat_at(first + FRAME_MIN)
    finally:
        await agent.stop()
    alerts, month, underused, stretches, rates = await outcome()

    (alert,) = alerts  # the notebook's, opened once and open all day; none for the server
    assert alert.details["pid"] == 31337 and alert.resolved_at is None

    (server,) = underused  # the report reads a page at a time: read here, in outcome's thread
    serving = [s for s in stretches if s.kind == IdleStretchKind.UNDERUSED]
    # Each quiet stretch is seen by the evaluation just before the next burst, over its 30-minute window.
    assert server.pid == 5000 and server.owner == "alice" and server.stretches == len(serving) == 36
    rate = rates[serving[0].gpu_id]
    assert server.idle_hours == pytest.approx(18.0) and server.idle_cost == (18 * rate).quantize(Decimal("0.01"))

    # One stretch all day, from the window of the first evaluation that found it (at minute 40: minute 10).
    (notebook,) = [s for s in stretches if s.kind == IdleStretchKind.FORGOTTEN]
    assert (notebook.until - notebook.began).total_seconds() == (DAY_MIN - 10) * 60
    # The waste panel: 18 h + 23 h 50 in window-long stretches; every idle sample also counts the server's
    # short pauses (37 idle minutes in each 40); the usage rollup folds the day's last minutes on its next run.
    assert month.idle_in_stretches.hours == pytest.approx(18 + (DAY_MIN - 10) / 60)
    assert month.total.idle_hours == pytest.approx(24 + 24 * 37 / 40, abs=0.1)
