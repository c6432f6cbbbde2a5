"""The DCGM-depth fields, from a fake NVML through the agent's frames and the real ingest, to /metrics and the API."""

import time

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from inventory.models import GPU
from monitoring.agent import frames
from monitoring.agent.metrics import SLOW_KEYS
from monitoring.agent.nvml import NvmlBackend
from monitoring.storage.models import GPUSample, GPUState
from tests.monitoring.agent.fake_nvml import NOT_SUPPORTED, FakeGpu, FakeNvml, nvml_error
from tests.monitoring.ingest.conftest import orm

pytestmark = pytest.mark.django_db(transaction=True)
TOKEN = "scrape"


def fake_node():
    healthy = FakeGpu(0, nvmlDeviceGetRemappedRows=(5, 1, 1, 0))
    bare = FakeGpu(
        1,
        nvmlDeviceGetFieldValues=nvml_error(NOT_SUPPORTED),
        nvmlDeviceGetTotalEnergyConsumption=nvml_error(NOT_SUPPORTED),
        nvmlDeviceGetRemappedRows=nvml_error(NOT_SUPPORTED),
        nvmlDeviceRegisterEvents=nvml_error(NOT_SUPPORTED),
    )
    lib = FakeNvml([healthy, bare])
    return NvmlBackend(lib=lib), lib, healthy


def scrape(path: str) -> dict:
    with override_settings(METRICS_TOKEN=TOKEN):
        text = Client().get(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    # The parser names a counter's samples <family>_total; they are keyed by the name the exposition gave.
    return {
        (family.name, sample.labels.get("UUID")): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_health_fields_reach_the_store_metrics_and_api_and_null_stays_null(agents):
    backend, lib, healthy = fake_node()
    before = await sync_to_async(scrape)("/metrics/server")
    agent = agents()
    await agent.connect()
    await agent.send(frames.hello_frame(backend, "gpu-01", "s-1"))
    assert (await agent.receive())["type"] == "welcome"
    now = time.time()
    await agent.send(frames.samples_frame(backend, 1, now - 1))
    assert await agent.receive() == {"type": "ack", "seq": 1}
    lib.xid_events.append((healthy, 79))
    await agent.send(frames.samples_frame(backend, 2, now))
    assert await agent.receive() == {"type": "ack", "seq": 2}

    server = await sync_to_async(scrape)("/metrics/server")
    counted = server[("fleet_ingest_samples", None)] - before.get(("fleet_ingest_samples", None), 0)
    assert counted == 4  # two frames of two GPUs, counted once committed
    assert server[("fleet_agent_connections", None)] >= 1

    first, second = await orm(lambda: list(GPU.objects.select_related("state").order_by("index")))()
    assert first.pci_bus_id == "00000000:07:00.0"
    stored = await orm(lambda: GPUSample.objects.filter(gpu=first).order_by("ts").last())()
    assert (stored.xid_count, stored.xid_last, stored.remapped_correctable, stored.remap_pending) == (1, 79, 5, 1)
    bare = second.state
    assert (bare.xid_count, bare.energy_mj, bare.mem_temp_c, bare.remapped_correctable) == (None,) * 4

    metrics = await sync_to_async(scrape)("/metrics/nodes/gpu-01")
    assert metrics[("DCGM_FI_DEV_XID_ERRORS", first.uuid)] == 79
    assert metrics[("fleet_gpu_xid_errors", first.uuid)] == 1
    assert metrics[("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", first.uuid)] == 5
    assert metrics[("DCGM_FI_DEV_ROW_REMAP_PENDING", first.uuid)] == 1
    assert metrics[("DCGM_FI_DEV_MEMORY_TEMP", first.uuid)] == 79
    assert metrics[("DCGM_FI_DEV_FB_RESERVED", first.uuid)] == 529
    assert metrics[("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", first.uuid)] == 9_876_543_210
    # Null on the bare GPU: its series are left out, never reported as 0.
    assert ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", second.uuid) not in metrics
    assert ("DCGM_FI_DEV_XID_ERRORS", second.uuid) not in metrics
    assert metrics[("DCGM_FI_DEV_GPU_UTIL", second.uuid)] == 97

    def api(*uuids):
        client = Client()
        client.force_login(get_user_model().objects.create_user("viewer", password="x"))
        return [client.get(f"/api/gpus/{uuid}/").json() for uuid in uuids]

    # A frame that leaves the slow fields out, as the agent does between their readings, keeps them.
    thinned = frames.samples_frame(backend, 3, now + 1)
    for sample in thinned["samples"]:
        for key in SLOW_KEYS:
            sample.pop(key)
    await agent.send(thinned)
    assert await agent.receive() == {"type": "ack", "seq": 3}
    newest = await orm(lambda: GPUSample.objects.filter(gpu=first).order_by("ts").last())()
    assert (newest.xid_last, newest.remapped_correctable, newest.mem_temp_c) == (None, None, 79)
    kept = await orm(GPUState.objects.get)(gpu=first.pk)
    assert (kept.xid_count, kept.xid_last, kept.remapped_correctable, kept.remap_pending) == (1, 79, 5, 1)

    healthy_api, bare_api = await sync_to_async(api)(first.uuid, second.uuid)
    assert (healthy_api["xid_last"], healthy_api["remapped_uncorrectable"], healthy_api["util_dec"]) == (79, 1, 3)
    assert (bare_api["energy_mj"], bare_api["remap_failure"]) == (None, None)
    assert (healthy_api["pci_bus_id"], bare_api["pci_bus_id"]) == ("00000000:07:00.0", "00000000:08:00.0")
