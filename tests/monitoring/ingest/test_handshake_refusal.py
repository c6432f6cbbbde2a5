"""A node cooling down after going over its rate limits is refused before its websocket is set up (HTTP 429 with
Retry-After), and the agent waits that out instead of taking it for a bad token.

Through the real uvicorn (tests/conftest.py asgi_server) and the real agent (monitoring/agent/client.py).
"""

import asyncio
import logging
import re
import time

import pytest
from django.conf import settings

from inventory.nodes import add_node
from monitoring.agent.client import Agent
from monitoring.agent.simulate import Simulator
from tests.support.websocket_limits import cooled_down

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_cooling_node_gets_http_429_with_retry_after_and_no_websocket(asgi_server):
    _, token = add_node("gpu-cooling")

    _, refusal = asyncio.run(cooled_down(asgi_server.port, token, "gpu-cooling"))

    assert refusal.status_code == 429
    assert "Sec-WebSocket-Accept" not in refusal.headers
    # Its debt is at most one refused frame below an empty allowance; it may come back at a second's worth.
    longest = (settings.AGENT_MAX_FRAME_BYTES + settings.AGENT_MAX_BYTES_PER_S) / settings.AGENT_MAX_BYTES_PER_S
    assert 1 <= int(refusal.headers["Retry-After"]) <= longest + 1
    assert re.fullmatch(r"rate_limited: over this node's limits; wait \d+\.\d s\n", refusal.body.decode())


def test_the_agent_waits_out_a_429_then_streams_and_never_takes_it_for_a_bad_token(asgi_server, caplog):
    _, token = add_node("gpu-patient")

    async def scenario() -> None:
        await cooled_down(asgi_server.port, token, "gpu-patient")  # now cooling for at least a second
        # A short backoff: an agent that ignored Retry-After would be refused again and again.
        agent = Agent(
            Simulator(1, "gpu-patient", scenario="training"),
            asgi_server.url,
            token,
            "gpu-patient",
            interval=0.1,
            backoff_base=0.01,
            backoff_cap=0.2,
            welcome_timeout=30,
        )
        task = asyncio.create_task(agent.run())
        try:
            deadline = time.monotonic() + 60
            while not (agent.connections and agent.seq >= 5 and len(agent.buffer) == 0):
                assert time.monotonic() < deadline, "the agent never streamed after its cool-down"
                await asyncio.sleep(0.05)
        finally:
            agent.stop()
            await asyncio.wait_for(task, 10)
        assert agent.connections == 1

    with caplog.at_level(logging.INFO, logger="monitoring.agent"):
        asyncio.run(asyncio.wait_for(scenario(), 120))

    waits = [record.getMessage() for record in caplog.records if "(rate limit)" in record.getMessage()]
    assert len(waits) == 1, caplog.text  # Retry-After covered the whole cool-down
    assert re.match(r"server asked to wait \d+ s \(rate limit\): rate_limited: over this node's limits", waits[0])
    assert "token" not in caplog.text and "HTTP 429" not in caplog.text
