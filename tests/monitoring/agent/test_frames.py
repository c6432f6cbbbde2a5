import json
import logging
import time

from monitoring.agent import AGENT_VERSION, PROTOCOL
from monitoring.agent import frames as frames_module
from monitoring.agent.frames import MAX_FRAME_BYTES, boot_id, encode, hello_frame, samples_frame
from monitoring.agent.metrics import METRIC_KEYS
from monitoring.agent.nvml import NvmlBackend
from monitoring.agent.simulate import Simulator

from .fake_nvml import FakeGpu, FakeNvml


def test_a_hello_names_the_node_its_driver_and_its_gpus():
    sim = Simulator(2, "gpu-01")

    hello = hello_frame(sim, "gpu-01", "abc123")

    assert hello["type"] == "hello" and hello["protocol"] == PROTOCOL == 1
    assert hello["hostname"] == "gpu-01"
    assert hello["agent_version"] == AGENT_VERSION
    assert hello["driver_version"] and hello["cuda_version"]
    assert hello["boot_id"] == boot_id() and len(hello["boot_id"]) == 36
    assert hello["session"] == "abc123"
    assert [g["uuid"] for g in hello["gpus"]] == sim.uuids


def test_a_samples_frame_reads_every_gpu_at_one_unix_time():
    sim = Simulator(3, "gpu-01")

    frame = samples_frame(sim, 7)

    assert frame["type"] == "samples" and frame["seq"] == 7
    assert [s["gpu"] for s in frame["samples"]] == sim.uuids
    assert len({s["ts"] for s in frame["samples"]}) == 1
    assert isinstance(frame["samples"][0]["ts"], float)
    assert abs(frame["samples"][0]["ts"] - time.time()) < 5
    for sample in frame["samples"]:
        assert list(sample) == ["ts", "gpu", *METRIC_KEYS, "nvlink", "processes"]


def test_an_implausible_reading_is_sent_as_null_and_logged_once(caplog):
    frames_module._reported_out_of_bounds.discard("temp_c")
    backend = NvmlBackend(lib=FakeNvml([FakeGpu(0, nvmlDeviceGetTemperature=lambda sensor: 5000)]))

    with caplog.at_level(logging.WARNING):
        frames = [samples_frame(backend, seq) for seq in (1, 2)]

    assert [f["samples"][0]["temp_c"] for f in frames] == [None, None]
    assert frames[0]["samples"][0]["util_gpu"] == 97
    assert len([r for r in caplog.records if "temp_c" in r.getMessage()]) == 1


def test_each_nvlink_is_checked_against_its_totals_range_and_a_gpu_without_links_sends_null():
    sim = Simulator(2, "gpu-node-01", seed=1, model="NVIDIA A100-SXM4-80GB")
    readings = sim.sample(time.time())
    readings[0]["nvlink"][3] = {"tx_kib_s": -5, "rx_kib_s": 10}
    readings[1]["nvlink"] = []
    sim.sample = lambda now: readings

    first, second = samples_frame(sim, 1)["samples"]

    assert len(first["nvlink"]) == 12
    assert first["nvlink"][3] == {"tx_kib_s": None, "rx_kib_s": 10}
    assert second["nvlink"] is None


def test_frames_encode_as_compact_json_with_nulls():
    frame = samples_frame(Simulator(1, "gpu-01", scenario="idle"), 1)

    text = encode(frame)

    assert json.loads(text) == frame
    assert ", " not in text and '"fan_pct":' in text


def test_a_frame_over_one_mebibyte_is_sent_without_its_process_lists(caplog):
    frame = samples_frame(Simulator(2, "gpu-01", scenario="training"), 3)
    for sample in frame["samples"]:
        sample["processes"][0]["cmdline"] = "x" * MAX_FRAME_BYTES

    with caplog.at_level(logging.WARNING):
        text = encode(frame)

    assert len(text.encode()) <= MAX_FRAME_BYTES
    decoded = json.loads(text)
    assert [s["processes"] for s in decoded["samples"]] == [None, None]
    assert decoded["samples"][0]["util_gpu"] == frame["samples"][0]["util_gpu"]
    assert "over 1 MiB" in caplog.text


def test_nul_and_lone_surrogates_are_replaced_before_sending():
    """A command line with bytes that are not UTF-8 reads as lone surrogates; the server would refuse them."""
    sim = Simulator(1, "gpu-01")
    frame = samples_frame(sim, 1)
    process = {"pid": 7, "user": "al\x00ice", "name": "py\udcffthon", "cmdline": "train \ud800", "sm_util": 1}
    frame["samples"][0]["processes"] = [process]

    sent = json.loads(encode(frame))["samples"][0]["processes"][0]

    assert sent["user"] == "al\ufffdice"
    assert sent["name"] == "py\ufffdthon" and sent["cmdline"].startswith("train \ufffd")
    assert all(text.encode() for text in (sent["user"], sent["name"], sent["cmdline"]))
