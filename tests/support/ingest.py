"""A scripted agent for alert and cost tests: frames through the real ingest (/ws/agent/) with alice's process."""

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.db import connections

from inventory.models import Project
from inventory.nodes import add_node
from monitoring.ingest.batcher import close_batcher
from monitoring.ingest.presence import close_sweeper
from tests.monitoring.ingest.agents import Agent, reading

HOST = "gpu-ingest-01"


@pytest.fixture
async def agent(gpu_models):
    """An agent of node gpu-ingest-01 (not yet connected); alice is in project vision."""

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
