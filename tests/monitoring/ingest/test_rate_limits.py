"""A node that sends faster than its allowance is told why and closed (4429); other nodes do not notice."""

import json
import time

import pytest
from django.test import override_settings

from fleet.nodes import add_node
from monitoring.ingest.limits import RateLimit
from tests.monitoring.ingest.agents import hello, samples
from tests.monitoring.ingest.conftest import orm

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_burst_is_allowed_then_the_rate():
    limit = RateLimit(frames_per_s=2, bytes_per_s=1000, burst_s=3)
    assert [limit.over(10, now=100.0) for _ in range(6)] == [None] * 6
    assert "more than 2 frames a second" in limit.over(10, now=100.0)
    assert limit.over(10, now=100.5) is None
    assert limit.over(10, now=100.5) is not None


def test_bytes_are_limited_too():
    limit = RateLimit(frames_per_s=100, bytes_per_s=1000, burst_s=2)
    assert limit.over(1500, now=0.0) is None
    assert "more than 1000 bytes a second" in limit.over(600, now=0.0)
    assert limit.over(600, now=0.2) is None


async def test_a_flooding_node_is_closed_4429_and_the_others_keep_their_acks(agents):
    token = (await orm(add_node)("gpu-02"))[1]
    with override_settings(AGENT_MAX_FRAMES_PER_S=1, AGENT_LIMIT_BURST_S=3):
        flooder, calm = agents(), agents(token=token, hostname="gpu-02")
        for agent in (flooder, calm):
            await agent.start(gpus=1)
        for seq in range(1, 40):
            await flooder.send(samples("gpu-01", seq, time.time() - 60 + seq, gpus=1))
        replies, code = await until_closed(flooder)
        assert code == 4429
        errors = [reply for reply in replies if reply["type"] == "error"]
        assert len(errors) == 1 and errors[0]["code"] == "rate_limited" and "frames a second" in errors[0]["detail"]
        assert {reply["seq"] for reply in replies if reply["type"] == "ack"} <= {1, 2}  # the burst's frames
        await calm.send(samples("gpu-02", 1, gpus=1))
        assert await calm.receive() == {"type": "ack", "seq": 1}
        again = agents()  # reconnecting does not refill the node's allowance
        await again.connect()
        await again.send(hello("gpu-01", gpus=1))
        for seq in range(40, 50):
            await again.send(samples("gpu-01", seq, time.time() - 60 + seq, gpus=1))
        assert (await until_closed(again))[1] == 4429


async def until_closed(agent) -> tuple[list[dict], int]:
    replies = []
    while True:
        message = await agent.ws.receive_output(10)
        if message["type"] == "websocket.close":
            return replies, message.get("code")
        replies.append(json.loads(message["text"]))
