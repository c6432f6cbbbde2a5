"""End to end: an agent streams a forgotten process through the real ingest; the rules find it and tell its owner."""

import time
from datetime import UTC, datetime

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.db import connections

from fleet.choices import AlertKind, TransportKind
from fleet.models import Project
from fleet.nodes import add_node
from monitoring.alerts import engine
from monitoring.alerts.models import Alert
from monitoring.ingest.batcher import close_batcher
from monitoring.ingest.presence import close_sweeper
from monitoring.notify.dispatch import dispatch_pending
from monitoring.notify.models import Notification
from monitoring.storage import rollups
from tests.telemetry.agents import Agent, reading

pytestmark = pytest.mark.django_db(transaction=True)
HOST = "gpu-ingest-01"


@pytest.fixture
async def agent(gpu_models):
    @database_sync_to_async
    def setup():
        alice = get_user_model().objects.create_user("alice", "alice@example.org", "x")
        Project.objects.create(name="vision").members.add(alice)
        return add_node(HOST)[1]

    yield Agent(await setup(), HOST)
    await close_batcher()
    await close_sweeper()
    await sync_to_async(connections.close_all, thread_sensitive=True)()


def frame(seq: int, ts: float, util: float, started_at: float) -> dict:
    forgotten = {
        "pid": 31337,
        "user": "alice",
        "name": "python",
        "cmdline": "python -m ipykernel_launcher",
        "mem_used_mib": 70000,
        "sm_util": 0,
        "started_at": started_at,
    }
    return {"type": "samples", "seq": seq, "samples": [reading(HOST, 0, ts, util_gpu=util, processes=[forgotten])]}


async def stream(agent, start: float, seconds: int, util: float, seq: int, started_at: float) -> int:
    """Frames every 10 s from `start` on; all in the last hour, which the ingest accepts without time travel."""
    for offset in range(0, seconds, 10):
        seq += 1
        await agent.send(frame(seq, start + offset, util, started_at))
        ack = await agent.receive()
        assert ack == {"type": "ack", "seq": seq}, ack
    return seq


@database_sync_to_async
def evaluate_at(moment: float):
    now = datetime.fromtimestamp(moment, tz=UTC)
    rollups.rollup_minutes(now)
    engine.evaluate(now)
    dispatch_pending()
    return list(Alert.objects.filter(kind=AlertKind.IDLE_PROCESS).select_related("owner"))


async def test_a_forgotten_process_streamed_by_an_agent_raises_one_alert_for_its_owner(agent):
    base = (time.time() // 60 - 40) * 60  # 40 minutes ago, on a minute
    started_at = base - 3 * 86400
    await agent.start(gpus=1)
    try:
        await stream(agent, base, 32 * 60, util=0, seq=0, started_at=started_at)
    finally:
        await agent.stop()
    assert await evaluate_at(base + 29 * 60) == []
    (alert,) = await evaluate_at(base + 31 * 60)
    assert alert.owner.username == "alice" and alert.details["pid"] == 31337
    assert len(await evaluate_at(base + 32 * 60)) == 1
    in_app = Notification.objects.filter(transport=TransportKind.IN_APP)
    told = await database_sync_to_async(lambda: list(in_app.values_list("user__username", flat=True)))()
    assert told == ["alice"]
