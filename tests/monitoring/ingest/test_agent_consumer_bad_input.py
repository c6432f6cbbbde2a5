"""/ws/agent/ refuses bad frames one by one with a clear error, keeps the connection and loses nothing stored."""

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from monitoring.storage.models import GPUSample
from tests.monitoring.ingest.agents import reading, samples
from tests.monitoring.ingest.conftest import orm

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def agent(agents):
    """An agent that has said hello and stored one good frame (seq 1)."""
    agent = agents()
    await agent.start(gpus=2)
    await agent.send(samples("gpu-01", 1, time.time() - 30))
    assert await agent.receive() == {"type": "ack", "seq": 1}
    return agent


async def refused(agent, frame) -> dict:
    """Send a bad frame, return the error; then check the connection still stores and nothing was lost.

    A frame with some valid samples is acked first (they are stored); the error then names the refused ones.
    """
    if isinstance(frame, bytes):
        await agent.ws.send_to(bytes_data=frame)
    else:
        await agent.send(frame)
    error = await agent.receive()
    acked = error["type"] == "ack"
    if acked:
        error = await agent.receive()
    assert error["type"] == "error", error
    sent = (json.loads(frame) if isinstance(frame, str) else frame)["samples"] if acked else []
    stored = len(sent) - len(error["refused"]) if acked else 0
    assert acked == (stored > 0), error
    await agent.send(samples("gpu-01", 100))
    assert await agent.receive() == {"type": "ack", "seq": 100}
    assert await orm(GPUSample.objects.count)() == 4 + stored
    return error


def with_value(**values) -> dict:
    frame = samples("gpu-01", 2)
    frame["samples"].append(reading("gpu-01", 1, time.time() - 1, **values))
    return frame


async def test_it_refuses_a_frame_over_the_size_limit(agent):
    with override_settings(AGENT_MAX_FRAME_BYTES=2048):
        frame = samples("gpu-01", 2)
        frame["samples"][0]["processes"][0]["cmdline"] = "x" * 4000
        error = await refused(agent, frame)
    assert error["code"] == "too_large" and "limit is 2048" in error["detail"]


async def test_it_refuses_a_binary_frame(agent):
    assert (await refused(agent, b"\x00\x01"))["code"] == "binary"


async def test_it_refuses_a_frame_that_is_not_json(agent):
    assert (await refused(agent, "{not json"))["code"] == "not_json"


async def test_it_refuses_json_that_is_not_an_object(agent):
    error = await refused(agent, "[1, 2]")
    assert error["code"] == "not_json" and "JSON object" in error["detail"]


async def test_it_refuses_a_frame_without_a_type(agent):
    error = await refused(agent, {"seq": 3, "samples": []})
    assert error["code"] == "bad_payload" and error["detail"].startswith("type:")


async def test_it_ignores_frame_types_of_newer_agents(agent):
    await agent.send({"type": "gossip", "news": 1})
    await agent.send(samples("gpu-01", 100))
    assert await agent.receive() == {"type": "ack", "seq": 100}


async def test_it_refuses_a_second_hello(agent):
    from tests.monitoring.ingest.agents import hello

    assert (await refused(agent, hello("gpu-01")))["code"] == "unexpected_hello"


async def test_it_refuses_a_frame_without_a_seq(agent):
    frame = samples("gpu-01", 2)
    frame["seq"] = "2"
    error = await refused(agent, frame)
    assert error["code"] == "bad_payload" and error["detail"].startswith("seq:") and "seq" not in error


@pytest.mark.parametrize(
    ("token", "detail"),
    [
        ("NaN", "samples[2].util_gpu: NaN is not a value"),
        ("Infinity", "samples[2].util_gpu: infinite"),
        ("-Infinity", "samples[2].util_gpu: infinite"),
    ],
)
async def test_it_refuses_nan_and_infinities(agent, token, detail):
    text = json.dumps(with_value(util_gpu=12345)).replace("12345", token)
    error = await refused(agent, text)
    assert error["code"] == "bad_payload" and detail in error["detail"] and error["seq"] == 2


@pytest.mark.parametrize(
    ("values", "detail"),
    [
        ({"util_gpu": 101}, "samples[2].util_gpu: above 100"),
        ({"power_w": -1}, "samples[2].power_w: negative"),
        ({"temp_c": -41}, "samples[2].temp_c: below -40"),
        ({"mem_used_mib": "60211"}, "samples[2].mem_used_mib: not a number"),
        ({"ecc_volatile": 1.5}, "samples[2].ecc_volatile: not a whole number"),
        ({"sm_clock_mhz": True}, "samples[2].sm_clock_mhz: not a number"),
        ({"nvlink": "fast"}, "samples[2].nvlink: a list of at most 36 links or null is required"),
        ({"nvlink": [{"tx_kib_s": 1, "rx_kib_s": 1}] * 37}, "samples[2].nvlink: a list of at most 36 links"),
        ({"nvlink": [{"tx_kib_s": 1}, 5]}, "samples[2].nvlink[1]: an object is required"),
        ({"nvlink": [{"tx_kib_s": -1, "rx_kib_s": 0}]}, "samples[2].nvlink[0].tx_kib_s: negative"),
        ({"nvlink": [{"tx_kib_s": 0, "rx_kib_s": "9"}]}, "samples[2].nvlink[0].rx_kib_s: not a number"),
    ],
)
async def test_it_refuses_out_of_bounds_values_field_by_field(agent, values, detail):
    error = await refused(agent, with_value(**values))
    assert error["code"] == "bad_payload" and detail in error["detail"]


async def test_it_names_every_bad_field_of_a_frame(agent):
    error = await refused(agent, with_value(util_gpu=101, fan_pct=-3))
    assert "samples[2].util_gpu: above 100" in error["detail"]
    assert "samples[2].fan_pct: negative" in error["detail"]


async def test_it_refuses_bad_processes(agent):
    error = await refused(agent, with_value(processes=[{"pid": -5, "user": 7, "sm_util": 140}]))
    assert "samples[2].processes[0].pid" in error["detail"]
    assert "samples[2].processes[0].user: text or null is required" in error["detail"]
    assert "samples[2].processes[0].sm_util: above 100" in error["detail"]


async def test_it_refuses_a_timestamp_far_in_the_future(agent):
    error = await refused(agent, samples("gpu-01", 2, time.time() + 3600))
    assert error["code"] == "bad_ts" and "samples[0].ts: 3600 s in the future" in error["detail"]


async def test_it_refuses_a_timestamp_older_than_the_agent_buffer(agent):
    error = await refused(agent, samples("gpu-01", 2, time.time() - 7200))
    assert error["code"] == "bad_ts" and "samples[0].ts: 7200 s old; the agent buffer holds 3600 s" in error["detail"]


async def test_it_refuses_a_gpu_the_hello_did_not_announce(agent):
    frame = samples("gpu-01", 2)
    frame["samples"][1]["gpu"] = "GPU-somebody-else"
    error = await refused(agent, frame)
    assert error["code"] == "unknown_gpu" and "samples[1].gpu: 'GPU-somebody-else' was not announced" in error["detail"]


async def test_one_bad_sample_costs_its_neighbours_nothing(agent):
    """A GPU reporting NaN one second in ten must not lose the other GPUs' samples of those seconds."""
    frame = samples("gpu-01", 2, time.time() - 20, gpus=2)
    frame["samples"][0]["util_gpu"] = 12345
    await agent.send(json.dumps(frame).replace("12345", "NaN"))
    assert await agent.receive() == {"type": "ack", "seq": 2}
    error = await agent.receive()
    assert error["type"] == "error" and error["seq"] == 2 and error["code"] == "bad_payload"
    assert error["refused"] == [
        {
            "sample": 0,
            "gpu": frame["samples"][0]["gpu"],
            "problems": ["samples[0].util_gpu: NaN is not a value (send null when unknown)"],
        }
    ]
    when = datetime.fromtimestamp(frame["samples"][0]["ts"], UTC)
    window = {"ts__gte": when - timedelta(milliseconds=1), "ts__lte": when + timedelta(milliseconds=1)}
    stored = await orm(lambda: [s.gpu.uuid for s in GPUSample.objects.select_related("gpu").filter(**window)])()
    assert stored == [frame["samples"][1]["gpu"]]


async def test_a_frame_whose_every_sample_is_refused_gets_only_the_error(agent):
    frame = samples("gpu-01", 2, time.time() - 20)
    for sample in frame["samples"]:
        sample["util_gpu"] = 300
    error = await refused(agent, frame)
    assert [item["sample"] for item in error["refused"]] == [0, 1]
