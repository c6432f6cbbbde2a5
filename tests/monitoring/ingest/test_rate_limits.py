"""A node that sends faster than its allowance is told why and closed (4429); other nodes do not notice."""

import json
import time

import pytest
from django.conf import settings
from django.test import override_settings

from inventory.node_tokens import hash_token
from inventory.nodes import add_node
from monitoring.ingest.limits import RateLimit, cool_down, cooling_down, limit_for
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


def test_a_node_closed_for_its_rate_may_connect_again_once_a_seconds_worth_is_back():
    limit = limit_for(-1, frames_per_s=2, bytes_per_s=1000, burst_s=3)
    assert limit.over(3000, now=100.0) is None  # the whole byte allowance

    cool_down("token-hash-of-node--1", -1)

    assert cooling_down("token-hash-of-node--1", now=100.0) == pytest.approx(1.0)
    assert cooling_down("token-hash-of-node--1", now=100.75) == pytest.approx(0.25)
    assert cooling_down("token-hash-of-node--1", now=101.0) is None
    assert cooling_down("token-hash-of-node--1", now=100.0) is None  # forgotten once it recovered


async def test_a_node_cooling_down_is_refused_at_connect_before_its_hello(agents, node_token):
    """On a server without the websocket denial-response extension (Channels' test client offers none): the
    error and 4429. Through uvicorn it is HTTP 429 before the websocket (test_handshake_refusal.py)."""
    node, token = node_token
    limit = await orm(limit_for)(
        node.pk, settings.AGENT_MAX_FRAMES_PER_S, settings.AGENT_MAX_BYTES_PER_S, settings.AGENT_LIMIT_BURST_S
    )
    limit.over(1)
    limit.bytes.level = -30 * limit.bytes.rate  # as if it had just sent far more than its allowance
    cool_down(hash_token(token), node.pk)

    again = agents()
    await again.connect()
    replies, code = await until_closed(again)

    assert code == 4429
    assert [reply["code"] for reply in replies] == ["rate_limited"]  # no welcome: nothing was looked up


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


def test_a_refused_frame_is_charged_so_the_node_waits_off_its_debt():
    """A 1 MiB frame refused with most of a MiB left must not let the node straight back in."""
    limit = limit_for(-2, frames_per_s=100, bytes_per_s=1000, burst_s=3)
    assert limit.over(2500, now=100.0) is None
    assert limit.over(1000, now=100.0) is not None  # 500 left

    limit.overdraw(1000, now=100.0)
    cool_down("token-hash-of-node--2", -2)

    assert cooling_down("token-hash-of-node--2", now=100.0) == pytest.approx(1.5)  # 500 in debt, then 1000
    assert cooling_down("token-hash-of-node--2", now=101.5) is None


def test_a_frame_refused_for_its_bytes_is_charged_one_frame_not_two():
    limit = RateLimit(frames_per_s=1, bytes_per_s=1000, burst_s=1)
    assert "bytes a second" in limit.over(1500, now=100.0)

    limit.overdraw(1500, now=100.0)

    # One frame and 1500 bytes in debt from a full allowance: bytes back to 1000 in 1.5 s, the frame in 1 s.
    assert limit.recovery_s(now=100.0) == pytest.approx(1.5)
