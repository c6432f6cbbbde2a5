"""NVLink throughput per link: a fake NVML, the agent's frames, the real ingest, /metrics and the API."""

import time

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from inventory.models import GPU
from monitoring.agent import frames
from monitoring.agent.metrics import NVLINK_STALE_S
from monitoring.agent.nvml import NvmlBackend
from monitoring.storage import latest
from monitoring.storage.models import GPUSample
from tests.monitoring.agent.fake_nvml import NOT_SUPPORTED, FakeGpu, FakeNvml, nvml_error
from tests.monitoring.agent.test_nvml import nvlink_gpu
from tests.monitoring.ingest.conftest import orm

pytestmark = pytest.mark.django_db(transaction=True)
TOKEN = "scrape"
GB = 1024  # dcgm-exporter's unit is bytes/s; ours KiB/s


def scrape(path: str) -> dict:
    """(family, UUID, nvlink label) → value, from /metrics parsed by prometheus_client's parser."""
    with override_settings(METRICS_TOKEN=TOKEN):
        text = Client().get(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    return {
        (family.name, sample.labels.get("UUID"), sample.labels.get("nvlink")): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def api(*uuids) -> list[dict]:
    client = Client()
    client.force_login(get_user_model().objects.get_or_create(username="viewer")[0])
    return [client.get(f"/api/gpus/{uuid}/").json() for uuid in uuids]


async def test_per_link_throughput_reaches_the_gpu_row_metrics_and_api_and_a_down_link_stays_null(agents):
    counters = {"tx": [0, 0, 0], "rx": [0, 0, 0]}
    nvlinked = nvlink_gpu(counters, states=[1, 0, 1])
    bare = FakeGpu(1, nvmlDeviceGetFieldValues=nvml_error(NOT_SUPPORTED))
    backend = NvmlBackend(lib=FakeNvml([nvlinked, bare]))
    agent = agents()
    await agent.connect()
    await agent.send(frames.hello_frame(backend, "gpu-01", "s-1"))
    assert (await agent.receive())["type"] == "welcome"
    now = time.time()
    await agent.send(frames.samples_frame(backend, 1, now - 2))
    assert await agent.receive() == {"type": "ack", "seq": 1}
    counters["tx"] = [2_000_000, 0, 500_000]
    counters["rx"] = [1_000_000, 0, 0]
    await agent.send(frames.samples_frame(backend, 2, now))
    assert await agent.receive() == {"type": "ack", "seq": 2}

    first, second = await orm(lambda: list(GPU.objects.select_related("state", "nvlink_state").order_by("index")))()
    assert latest.nvlink(first)["links"] == [
        {"tx_kib_s": 1_000_000, "rx_kib_s": 500_000},
        {"tx_kib_s": None, "rx_kib_s": None},
        {"tx_kib_s": 250_000, "rx_kib_s": 0},
    ]
    assert (first.state.nvlink_tx_kib_s, first.state.nvlink_rx_kib_s) == (1_250_000, 500_000)
    assert latest.nvlink(second) is None

    metrics = await sync_to_async(scrape)("/metrics/nodes/gpu-01")
    assert metrics[("DCGM_FI_PROF_NVLINK_TX_BYTES", first.uuid, "0")] == 1_000_000 * GB
    assert metrics[("DCGM_FI_PROF_NVLINK_RX_BYTES", first.uuid, "0")] == 500_000 * GB
    assert metrics[("DCGM_FI_PROF_NVLINK_TX_BYTES", first.uuid, "2")] == 250_000 * GB
    assert ("DCGM_FI_PROF_NVLINK_TX_BYTES", first.uuid, "1") not in metrics  # down: left out, never 0
    assert metrics[("DCGM_FI_PROF_NVLINK_TX_BYTES", first.uuid, None)] == 1_250_000 * GB  # the total, unlabelled
    assert not [key for key in metrics if key[1] == second.uuid and "NVLINK" in key[0]]

    with_links, without = await sync_to_async(api)(first.uuid, second.uuid)
    assert with_links["nvlink"] == latest.nvlink(first)["links"]
    assert (with_links["nvlink_tx_kib_s"], without["nvlink"], without["nvlink_tx_kib_s"]) == (1_250_000, None, None)


def totals_only(frame: dict) -> dict:
    """The frame as an agent from before per-link throughput sends it (or a current one between its readings)."""
    for sample in frame["samples"]:
        del sample["nvlink"]
    return frame


async def test_an_agent_that_sends_totals_only_is_accepted_and_its_gpu_has_no_links(agents):
    counters = {"tx": [0, 0], "rx": [0, 0]}
    backend = NvmlBackend(lib=FakeNvml([nvlink_gpu(counters)]))
    agent = agents()
    await agent.connect()
    await agent.send(frames.hello_frame(backend, "gpu-01", "s-1"))
    assert (await agent.receive())["type"] == "welcome"
    now = time.time()
    await agent.send(totals_only(frames.samples_frame(backend, 1, now - 2)))
    assert await agent.receive() == {"type": "ack", "seq": 1}
    counters["tx"] = [4_000, 2_000]
    await agent.send(totals_only(frames.samples_frame(backend, 2, now)))
    assert await agent.receive() == {"type": "ack", "seq": 2}

    gpu = await orm(GPU.objects.select_related("state", "nvlink_state").get)()
    assert (latest.nvlink(gpu), gpu.state.nvlink_tx_kib_s) == (None, 3_000)
    assert await orm(GPUSample.objects.filter(gpu=gpu, nvlink_tx_kib_s=3_000).count)() == 1
    metrics = await sync_to_async(scrape)("/metrics/nodes/gpu-01")
    assert metrics[("DCGM_FI_PROF_NVLINK_TX_BYTES", gpu.uuid, None)] == 3_000 * GB
    assert not [key for key in metrics if key[2] is not None]


async def test_samples_between_per_link_readings_keep_them_until_they_are_stale(agents):
    counters = {"tx": [0, 0], "rx": [0, 0]}
    backend = NvmlBackend(lib=FakeNvml([nvlink_gpu(counters)]))
    agent = agents()
    await agent.connect()
    await agent.send(frames.hello_frame(backend, "gpu-01", "s-1"))
    assert (await agent.receive())["type"] == "welcome"
    now = time.time()
    read_at = now - NVLINK_STALE_S - 10
    await agent.send(frames.samples_frame(backend, 1, read_at - 2))
    counters["tx"] = [20_000, 40_000]
    await agent.send(frames.samples_frame(backend, 2, read_at))
    await agent.send(totals_only(frames.samples_frame(backend, 3, read_at + 5)))
    assert [await agent.receive() for _ in range(3)] == [{"type": "ack", "seq": seq} for seq in (1, 2, 3)]

    gpu = await orm(GPU.objects.get)()
    [fresh] = await sync_to_async(api)(gpu.uuid)
    assert fresh["nvlink"] == [{"tx_kib_s": 10_000, "rx_kib_s": 0}, {"tx_kib_s": 20_000, "rx_kib_s": 0}]
    assert (await sync_to_async(scrape)("/metrics"))[("DCGM_FI_PROF_NVLINK_TX_BYTES", gpu.uuid, "1")] == 20_000 * GB

    await agent.send(totals_only(frames.samples_frame(backend, 4, now)))  # past NVLINK_STALE_S after the reading
    assert await agent.receive() == {"type": "ack", "seq": 4}
    [stale] = await sync_to_async(api)(gpu.uuid)
    assert (stale["nvlink"], stale["nvlink_tx_kib_s"]) == (None, 0)
    assert not [key for key in await sync_to_async(scrape)("/metrics") if key[2] is not None]
