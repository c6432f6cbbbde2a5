"""Hostile input from one agent ends in an error frame (and a close code where the protocol says so) for that
agent alone: nothing crashes the consumer, and the node's next connection is welcomed as usual."""

import json
import time

import pytest

from monitoring.storage.models import GPUSample, ProcessSample
from tests.monitoring.ingest.agents import hello, samples
from tests.monitoring.ingest.conftest import orm

pytestmark = pytest.mark.django_db(transaction=True)

DEEP = "[" * 100_000 + "]" * 100_000


async def test_deeply_nested_json_after_the_hello_is_refused_and_the_node_can_reconnect(agents):
    agent = agents()
    await agent.start()
    await agent.send(DEEP)
    error = await agent.receive()
    assert error["type"] == "error" and error["code"] == "too_deep", error
    await agent.send(samples("gpu-01", 1))
    assert await agent.receive() == {"type": "ack", "seq": 1}
    await agent.stop()
    again = agents()
    welcome = await again.start()
    assert welcome["resume_seq"] == 1


async def test_nesting_just_under_the_interpreters_limit_is_refused_too(agents):
    agent = agents()
    await agent.start()
    await agent.send('{"type": "samples", "seq": 1, "samples": [], "extra": ' + "[" * 40 + "]" * 40 + "}")
    error = await agent.receive()
    assert error["code"] == "too_deep" and "deeper than" in error["detail"]
    await agent.send('{"type": ' + "[" * 900 + "]" * 900 + "}")
    assert (await agent.receive())["code"] == "too_deep"


@pytest.mark.parametrize(
    ("frame", "field", "code"),
    [
        (DEEP, None, "too_deep"),
        (hello("gpu-01", agent_version="1.0\u0000"), "agent_version", "bad_text"),
        (hello("gpu-01", session="\ud800"), "session", "bad_text"),
        ('{"type": "hello", "protocol": 1, "hostname": "gpu-01\\u0000", "gpus": []}', "hostname", "bad_text"),
        (
            '{"type": "hello", "protocol": 1, "hostname": "gpu-01", "gpus": [{"index": 0, "uuid": "GPU-\\udc80"}]}',
            "gpus[0].uuid",
            "bad_text",
        ),
        (
            '{"type": "hello", "protocol": 1, "hostname": "gpu-01", "gpus": [{"index": 0, "uuid": "GPU-1", '
            '"name": "H\\u0000"}]}',
            "gpus[0].name",
            "bad_text",
        ),
    ],
)
async def test_a_hello_with_nul_lone_surrogates_or_deep_nesting_gets_an_error_and_close_4400(
    agents, frame, field, code
):
    agent = agents()
    await agent.connect()
    await agent.send(frame)
    error = await agent.receive()
    assert error["type"] == "error" and error["code"] == code, error
    if field is not None:
        assert error["detail"].startswith(f"{field}: ")
    assert await agent.close_code() == 4400
    again = agents()
    assert (await again.start())["type"] == "welcome"


async def test_a_connection_that_failed_leaves_nothing_that_blocks_the_next(agents):
    """Whatever way a connection ends, the node's next one is welcomed (and replaces any that is still open)."""
    first = agents()
    await first.start()
    await first.send(DEEP)
    await first.receive()
    second = agents()
    await second.start()
    assert await first.close_code() == 4409
    await second.send(samples("gpu-01", 1, time.time() - 5))
    assert await second.receive() == {"type": "ack", "seq": 1}


@pytest.mark.parametrize(
    ("cmdline", "stored"),
    [
        ("python train.py --gpus [0,1] --cfg {a: [1]}", True),  # brackets in a string: the walk decides the depth
        ('python -c "print(\\"x\\")" C:\\temp\\', True),  # escaped quotes and backslashes
        ("the text \\u0000 and \\ud800", True),  # an escape's text (its backslash escaped), not the character
        ("étude ünïcode", True),  # sent as \u escapes
        ("tail \\\u0000", False),  # an escaped backslash, then a real NUL
        ("tail \\\ud800", False),
    ],
    ids=["brackets", "escapes", "escape text", "non-ascii", "nul after backslash", "surrogate after backslash"],
)
async def test_text_that_could_fool_the_whole_frame_scans_is_judged_by_its_characters(agents, cmdline, stored):
    """The server clears most frames' depth and text from the raw JSON at once; the others get every check."""
    agent = agents()
    await agent.start(gpus=1)
    frame = samples("gpu-01", 1, time.time() - 5, gpus=1)
    frame["samples"][0]["processes"][0]["cmdline"] = cmdline
    await agent.send(frame)
    answer = await agent.receive()
    if stored:
        assert answer == {"type": "ack", "seq": 1}
        assert await orm(ProcessSample.objects.values_list("cmdline", flat=True).get)() == cmdline
    else:
        assert answer["code"] == "bad_text" and answer["detail"].startswith("samples[0].processes[0].cmdline: "), answer
        assert await orm(ProcessSample.objects.count)() == 0


@pytest.mark.parametrize("number", ["1" + "0" * 400, "-" + "9" * 330], ids=["huge", "huge negative"])
async def test_a_whole_number_beyond_a_doubles_range_is_refused_by_name_and_the_other_samples_kept(agents, number):
    """Such a ts made the checks raise (OverflowError), and the whole frame was refused as a server error."""
    agent = agents()
    await agent.start()
    text = json.dumps(samples("gpu-01", 1, time.time() - 5)).replace('"ts": ', f'"ts": {number}, "was": ', 1)
    await agent.send(text)
    assert await agent.receive() == {"type": "ack", "seq": 1}
    error = await agent.receive()
    assert error["code"] == "bad_payload" and error["refused"][0]["sample"] == 0, error
    assert error["detail"].startswith("samples[0].ts: "), error
    assert await orm(GPUSample.objects.count)() == 1
