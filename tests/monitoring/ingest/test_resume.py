"""resume_seq means every frame of the session up to it is stored or refused for good, never just the highest."""

import time

import pytest

from monitoring.ingest.resume import AHEAD_LIMIT, advance
from tests.monitoring.ingest.agents import samples

pytestmark = pytest.mark.django_db(transaction=True)


async def welcome_after(agents, *frames) -> int:
    agent = agents()
    await agent.start(session="start-1")
    for frame in frames:
        await agent.send(frame)
        await agent.receive()
    await agent.stop()
    return (await agents().start(session="start-1"))["resume_seq"]


async def test_a_frame_stored_past_a_gap_does_not_move_resume_seq_past_the_gap(agents):
    now = time.time()
    assert await welcome_after(agents, samples("gpu-01", 1, now - 9), samples("gpu-01", 3, now - 7)) == 1
    assert await welcome_after(agents, samples("gpu-01", 2, now - 8)) == 3


async def test_a_frame_refused_for_good_does_not_hold_resume_seq_back(agents):
    now = time.time()
    refused = samples("gpu-01", 2, now - 8, util_gpu=300)
    assert await welcome_after(agents, samples("gpu-01", 1, now - 9), refused, samples("gpu-01", 3, now - 7)) == 3


def test_the_watermark_absorbs_what_was_settled_above_it():
    assert advance(0, [], [1, 2, 3]) == (3, [])
    assert advance(0, [], [2, 3]) == (0, [2, 3])
    assert advance(0, [2, 3], [1]) == (3, [])
    assert advance(5, [], [3, 4]) == (5, [])


def test_a_gap_the_agent_can_no_longer_fill_is_given_up():
    """Past the agent's buffer the frames of a gap are gone; the watermark moves on without them."""
    settled = list(range(10, 10 + AHEAD_LIMIT + 1))
    assert advance(0, [], settled) == (10 + AHEAD_LIMIT, [])
    assert advance(0, [], [*settled[1:], 5]) == (5, settled[1:])
