"""How the ingest writes: acks wait for the commit, frames of many nodes share a flush, every writer agrees."""

import asyncio
import time

import psycopg
import pytest
from django.test import override_settings

from inventory.choices import NodeStatus
from inventory.models import GPU, Node
from inventory.nodes import add_node
from monitoring.agent.metrics import METRIC_KEYS
from monitoring.ingest import batcher as batcher_module
from monitoring.ingest import presence, publish
from monitoring.ingest.batcher import batcher
from monitoring.ingest.models import NodeStatusChange
from monitoring.storage.models import GPUSample, GPUState, ProcessSample
from tests.monitoring.ingest.agents import gpu_uuid, samples
from tests.monitoring.ingest.conftest import orm
from tests.support.baselines import WRITERS
from tests.support.processes import database_url_for_processes

pytestmark = pytest.mark.django_db(transaction=True)


async def test_the_ack_waits_for_the_commit(agents):
    agent = agents()
    await agent.start(gpus=1)
    gpu = await orm(GPU.objects.get)(uuid=gpu_uuid("gpu-01", 0))
    with psycopg.connect(database_url_for_processes()) as other:
        other.execute("SELECT 1 FROM monitoring_gpustate WHERE gpu_id = %s FOR UPDATE", [gpu.pk])  # the flush waits
        await agent.send(samples("gpu-01", 1, gpus=1))
        assert await agent.nothing_more(0.7)
        assert other.execute("SELECT count(*) FROM monitoring_gpusample").fetchone()[0] == 0
        other.rollback()
        assert await agent.receive() == {"type": "ack", "seq": 1}
        assert other.execute("SELECT count(*) FROM monitoring_gpusample").fetchone()[0] == 1


async def test_frames_of_several_nodes_share_one_flush(agents):
    tokens = {"gpu-01": None}
    for hostname in ("gpu-02", "gpu-03"):
        tokens[hostname] = (await orm(add_node)(hostname))[1]
    with override_settings(INGEST_FLUSH_MS=300):
        connected = [agents()] + [agents(token=tokens[h], hostname=h) for h in ("gpu-02", "gpu-03")]
        for agent in connected:
            await agent.start(gpus=2)
        before = batcher().flushes
        for agent in connected:
            await agent.send(samples(agent.hostname, 1))
        for agent in connected:
            assert await agent.receive() == {"type": "ack", "seq": 1}
        assert batcher().flushes == before + 1
    assert await orm(GPUSample.objects.count)() == 6


@pytest.mark.parametrize("writer", ["insert", "copy", "per-sample"])
async def test_every_writer_stores_the_same_rows(agents, writer, monkeypatch):
    monkeypatch.setattr(batcher_module, "write_frames", WRITERS[writer])  # the benchmarks' baselines too
    agent = agents()
    await agent.start(gpus=2)
    ts = round(time.time() - 5, 3)
    for seq, frame in enumerate([samples("gpu-01", 1, ts), samples("gpu-01", 2, ts + 1, fan_pct=40)], 1):
        await agent.send(frame)
        assert await agent.receive() == {"type": "ack", "seq": seq}
    await agent.send(samples("gpu-01", 1, ts))  # a replay
    assert await agent.receive() == {"type": "ack", "seq": 1}
    rows = await orm(lambda: list(GPUSample.objects.order_by("ts", "gpu__index").values("ts", *METRIC_KEYS)))()
    assert len(rows) == 4 and [r["fan_pct"] for r in rows] == [None, None, 40, 40]
    assert await orm(ProcessSample.objects.count)() == 4
    state = await orm(GPUState.objects.get)(gpu__uuid=gpu_uuid("gpu-01", 1))
    assert state.fan_pct == 40 and abs(state.last_sample_at.timestamp() - (ts + 1)) < 1e-6


class LiveRecorder:
    """Stands in for monitoring.live.fanout: records what the ingest hands over and what was committed by then."""

    def __init__(self):
        self.updates: list[list] = []
        self.statuses: list[tuple[str, str]] = []
        self.stored_when_published: list[int] = []

    async def apublish_gpu_updates(self, updates: list) -> None:
        self.stored_when_published.append(await orm(GPUSample.objects.count)())
        self.updates.append(updates)

    async def apublish_node_status(self, hostname: str, status: str) -> None:
        self.statuses.append((hostname, status))


@pytest.fixture
def live(monkeypatch):
    recorder = LiveRecorder()
    monkeypatch.setattr(publish, "_live", lambda: recorder)
    return recorder


async def eventually(predicate, timeout: float = 5.0) -> float:
    started = time.monotonic()
    while not await predicate():
        assert time.monotonic() - started < timeout, "timed out"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_the_live_pages_get_the_latest_state_of_each_gpu_once_per_flush_after_commit(agents, live):
    with override_settings(INGEST_FLUSH_MS=300):
        agent = agents()
        await agent.start(gpus=2)
        now = round(time.time(), 3)
        for seq in (1, 2, 3):
            await agent.send(samples("gpu-01", seq, now - 3 + seq, util_gpu=10 * seq))
        for seq in (1, 2, 3):
            assert (await agent.receive())["seq"] == seq
        await eventually(lambda: orm(lambda: bool(live.updates))())
    assert live.statuses == [("gpu-01", "online")]
    assert len(live.updates) == 1 and live.stored_when_published == [6]
    update = live.updates[0][0].live_update()
    assert set(update) == {"uuid", "node", "index", "ts", *METRIC_KEYS, "memory_total_mib", "processes"}
    assert (update["uuid"], update["node"], update["index"], update["ts"]) == (gpu_uuid("gpu-01", 0), "gpu-01", 0, now)
    assert (update["util_gpu"], update["memory_total_mib"], update["processes"][0]["user"]) == (30, 81559, "alice")


async def test_a_silent_node_goes_offline_within_5_seconds_and_back_online_on_its_next_frame(agents, live):
    with override_settings(AGENT_INTERVAL_S=1.0):
        agent = agents()
        await agent.start(gpus=1)
        sent_at = time.monotonic()  # the frame's flush, which sets last_seen, comes after this
        await agent.send(samples("gpu-01", 1, gpus=1))
        await agent.receive()
        acked_at = time.monotonic()  # and before this

        async def offline():
            return (await orm(Node.objects.get)(hostname="gpu-01")).status == NodeStatus.OFFLINE

        await eventually(offline, timeout=8)
        offline_at = time.monotonic()
        # 3 intervals of silence, then at most one sweep (0.5 s) and the check's own time.
        assert offline_at - sent_at >= 2.95 and offline_at - acked_at <= 5.0
        # The sweep commits the change before it hands it to the live pages, so the hand-over may trail the row.
        await eventually(lambda: asyncio.sleep(0, ("gpu-01", "offline") in live.statuses), timeout=5)
        await agent.send(samples("gpu-01", 2, gpus=1))
        await agent.receive()
    node = await orm(Node.objects.get)(hostname="gpu-01")
    assert node.status == NodeStatus.ONLINE
    history = NodeStatusChange.objects.order_by("created").values_list("new_status", "reason")
    changes = await orm(lambda: list(history))()
    assert changes == [
        ("online", "agent connected"),
        ("offline", "no telemetry for 3 intervals (3 s)"),
        ("online", "telemetry received"),
    ]
    await eventually(lambda: orm(lambda: live.statuses[-1] == ("gpu-01", "online"))())


async def test_a_process_whose_agents_left_marks_them_offline_then_stops_checking(agents):
    """Another process's nodes are its own to mark (and to announce to its live pages)."""
    with override_settings(AGENT_INTERVAL_S=0.5):
        agent = agents()
        await agent.start(gpus=1)
        await agent.send(samples("gpu-01", 1, gpus=1))
        await agent.receive()
        sweeper = presence._sweepers[asyncio.get_running_loop()]
        await agent.stop()
        assert sweeper.running
        await eventually(lambda: asyncio.sleep(0, not sweeper.running), timeout=6)
    assert (await orm(Node.objects.get)(hostname="gpu-01")).status == NodeStatus.OFFLINE


async def test_a_draining_node_stays_draining_while_it_reports(agents, node_token):
    node, _ = node_token
    await orm(Node.objects.filter(pk=node.pk).update)(status=NodeStatus.DRAINING)
    agent = agents()
    await agent.start(gpus=1)
    await agent.send(samples("gpu-01", 1, gpus=1))
    await agent.receive()
    assert (await orm(Node.objects.get)(pk=node.pk)).status == NodeStatus.DRAINING


async def test_a_frame_sent_twice_into_one_flush_is_stored_once(agents):
    with override_settings(INGEST_FLUSH_MS=300):
        agent = agents()
        await agent.start(gpus=2)
        frame = samples("gpu-01", 1)
        frame["samples"][0]["processes"].append(dict(frame["samples"][0]["processes"][0]))  # the same pid twice
        await agent.send(frame)
        await agent.send(frame)
        assert [await agent.receive() for _ in range(2)] == [{"type": "ack", "seq": 1}] * 2
        assert batcher().flushes == 1
    assert await orm(GPUSample.objects.count)() == 2
    assert await orm(ProcessSample.objects.count)() == 2
