"""One frame PostgreSQL cannot store costs only that frame: the batch it shared is stored and acked, and the
writer keeps flushing for every node (a writer that stops anyway is restarted, with its cause logged)."""

import logging
import time

import pytest
from django.test import override_settings

from inventory.nodes import add_node
from monitoring.ingest import batcher as batcher_module
from monitoring.ingest.batcher import batcher
from monitoring.ingest.models import AgentSession
from monitoring.storage.models import GPUSample
from tests.monitoring.ingest.agents import samples
from tests.monitoring.ingest.conftest import orm

pytestmark = pytest.mark.django_db(transaction=True)


async def two_nodes(agents):
    other_token = (await orm(add_node)("gpu-02"))[1]
    first, second = agents(), agents(token=other_token, hostname="gpu-02")
    for agent in (first, second):
        await agent.start(gpus=2)
    return first, second


def stored(hostname: str) -> int:
    return GPUSample.objects.filter(gpu__node__hostname=hostname).count()


@pytest.mark.parametrize(
    ("spoil", "field", "kept"),
    [
        (lambda frame: frame["samples"][0]["processes"][0].update(user="ali\u0000ce"), "processes[0].user", 1),
        (lambda frame: frame["samples"][1]["processes"][0].update(cmdline="\ud800"), "processes[0].cmdline", 1),
        (lambda frame: frame.update(seq=2**64), "seq", 0),
    ],
    ids=["nul user", "lone surrogate cmdline", "seq 2**64"],
)
async def test_a_frame_postgres_cannot_store_costs_no_other_node_anything(agents, spoil, field, kept):
    with override_settings(INGEST_FLUSH_MS=300):  # both nodes' frames share a flush
        bad, good = await two_nodes(agents)
        frame = samples("gpu-01", 1, time.time() - 2)
        spoil(frame)
        await bad.send(frame)
        await good.send(samples("gpu-02", 1, time.time() - 2))
        error = await bad.receive()
        if kept:  # the frame's other sample is stored
            assert error == {"type": "ack", "seq": 1}
            error = await bad.receive()
        assert error["type"] == "error" and field in error["detail"], error
        assert await good.receive() == {"type": "ack", "seq": 1}
        for seq in (2, 3):
            await good.send(samples("gpu-02", seq))
            assert await good.receive() == {"type": "ack", "seq": seq}
        await bad.send(samples("gpu-01", 5))
        assert await bad.receive() == {"type": "ack", "seq": 5}
    assert await orm(stored)("gpu-02") == 6
    assert await orm(stored)("gpu-01") == 2 + kept


async def test_a_failed_flush_is_split_so_only_the_frame_at_fault_is_refused(agents, monkeypatch):
    """Past validation (a check the writer must not rely on), a frame PostgreSQL refuses is found by bisection."""
    real_check = batcher_module.__dict__.get("write_frames")
    assert real_check is not None
    with override_settings(INGEST_FLUSH_MS=300):
        bad, good = await two_nodes(agents)
        frames = [samples("gpu-01", 1, time.time() - 3), samples("gpu-01", 2, time.time() - 2)]
        frames[1]["samples"][0]["processes"][0]["user"] = "NUL-to-be"
        monkeypatch.setattr(
            batcher_module,
            "write_frames",
            lambda items, now: real_check([poisoned(item) for item in items], now),
        )
        for frame in frames:
            await bad.send(frame)
        await good.send(samples("gpu-02", 1, time.time() - 2))
        assert await good.receive() == {"type": "ack", "seq": 1}
        assert await bad.receive() == {"type": "ack", "seq": 1}
        error = await bad.receive()
        assert error["type"] == "error" and error["code"] == "not_stored" and error["seq"] == 2, error
    assert await orm(stored)("gpu-02") == 2
    assert await orm(stored)("gpu-01") == 2
    assert await orm(lambda: AgentSession.objects.get(node__hostname="gpu-02").last_seq)() == 1


def poisoned(frame):
    """The frame with "NUL-to-be" turned into a real NUL, as if validation had let it through."""
    for _, sample in frame.samples:
        for process in sample.processes or ():
            if process["user"] == "NUL-to-be":
                process["user"] = "\u0000"
    return frame


async def test_a_writer_that_stops_is_restarted_and_says_why(agents, monkeypatch, caplog):
    bad, good = await two_nodes(agents)
    real_flush = batcher_module.Batcher._flush
    calls = []

    async def broken_once(self, batch):
        calls.append(len(batch))
        if len(calls) == 1:
            raise RuntimeError("a fault outside the write")
        await real_flush(self, batch)

    monkeypatch.setattr(batcher_module.Batcher, "_flush", broken_once)
    with caplog.at_level(logging.ERROR, logger="monitoring.ingest.batcher"):
        await good.send(samples("gpu-02", 1))
        assert await good.close_code() == 1011  # not stored: the agent reconnects and replays
        assert "a fault outside the write" in caplog.text
    await bad.send(samples("gpu-01", 1))
    assert await bad.receive() == {"type": "ack", "seq": 1}
    assert batcher().recoveries >= 1
