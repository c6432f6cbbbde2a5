"""The ingest publishes committed updates; the live group gets one coalesced message per tick."""

import asyncio
import json
import time

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.db import transaction

from inventory.models import OsAccount
from monitoring.agent.metrics import METRIC_KEYS, SLOW_KEYS
from monitoring.ingest.validation import Sample
from monitoring.ingest.writer import GPURef, MovedGPU
from monitoring.live.fanout import (
    UPDATE,
    apublish_gpu_updates,
    apublish_node_status,
    coalescer,
    publish_node_status_on_commit,
)
from tests.monitoring.live.conftest import gpu_update

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("thread_connections_closed")]


@pytest.fixture(autouse=True)
def slow_tick(settings):
    settings.LIVE_TICK_S = 0.5
    settings.LIVE_OWNER_CACHE_S = 30.0


async def test_many_publishes_within_a_tick_become_one_message_with_the_latest_state(listener):
    await apublish_gpu_updates([gpu_update(util_gpu=1)])
    first = await listener.receive()
    for util in range(10, 60, 10):
        await apublish_gpu_updates([gpu_update(util_gpu=util), gpu_update("GPU-live-1", index=1, util_gpu=util + 1)])

    second = await listener.receive()

    assert first["type"] == UPDATE and [g["util_gpu"] for g in first["gpus"]] == [1]
    assert {g["uuid"]: g["util_gpu"] for g in second["gpus"]} == {"GPU-live-0": 50, "GPU-live-1": 51}
    assert await listener.nothing_within(0.8)


async def test_per_link_figures_published_within_a_tick_survive_a_newer_update_without_them(listener):
    await apublish_gpu_updates([gpu_update(util_gpu=1)])
    await listener.receive()
    links = {"ts": 1795000000.0, "links": [{"tx_kib_s": 1_000_000, "rx_kib_s": 900_000}]}
    await apublish_gpu_updates([gpu_update(util_gpu=2, nvlink=links)])
    await apublish_gpu_updates([gpu_update(util_gpu=3)])  # the next sample: per-link figures come every 30 s

    (gpu,) = (await listener.receive())["gpus"]

    assert (gpu["util_gpu"], gpu["nvlink"]) == (3, links["links"])


async def test_the_ingests_records_go_out_as_the_latest_state_with_the_links_of_an_earlier_one(listener):
    """As fast as acks allow, a GPU moves dozens of times a tick: only the last record is made into a live state."""
    await apublish_gpu_updates([gpu_update(util_gpu=1)])
    await listener.receive()
    ref, now = GPURef(1, "GPU-live-0", 0, "gpu-01", 81559), time.time()

    def moved(util: int, links: list[dict] | None = None) -> MovedGPU:
        values = tuple(float(util) if key == "util_gpu" else None for key in METRIC_KEYS)
        return MovedGPU(ref, Sample(ref.uuid, now + util, values, [], links), tuple(7 for _ in SLOW_KEYS))

    await apublish_gpu_updates([moved(2, links=[{"tx_kib_s": 5, "rx_kib_s": None}])])
    for util in range(3, 40):
        await apublish_gpu_updates([moved(util)])

    (gpu,) = (await listener.receive())["gpus"]

    assert (gpu["util_gpu"], gpu["ts"], gpu["memory_total_mib"]) == (39, now + 39, 81559)
    assert gpu["nvlink"] == [{"tx_kib_s": 5, "rx_kib_s": None}]
    assert all(gpu[key] == 7 for key in SLOW_KEYS)


async def test_updates_are_never_sent_closer_together_than_a_tick(listener):
    await apublish_gpu_updates([gpu_update(util_gpu=1)])
    first = await listener.receive()
    await apublish_gpu_updates([gpu_update(util_gpu=2)])
    second = await listener.receive()
    # Compared on the messages' own send times: when this test reads them is up to a busy machine.
    assert second["sent_at"] - first["sent_at"] >= 0.5 * 0.8


async def test_the_first_update_after_a_quiet_spell_goes_out_without_waiting_a_tick(listener, settings):
    settings.LIVE_TICK_S = 30.0
    await apublish_gpu_updates([gpu_update()])
    message = await listener.receive(timeout_s=10)
    assert message["gpus"][0]["uuid"] == "GPU-live-0"


async def test_publishing_returns_before_anything_is_sent(listener):
    await apublish_gpu_updates([gpu_update()])
    assert coalescer().gpus and coalescer().sender is not None
    await listener.receive()
    assert not coalescer().gpus


async def test_a_node_status_travels_with_the_gpu_updates(listener):
    await apublish_node_status("gpu-01", "offline")
    message = await listener.receive()
    expected = {"hostname": "gpu-01", "status": "offline", "status_label": "Offline", "colour": "grey"}
    assert message["nodes"] == [expected]
    assert message["gpus"] == []


async def test_a_missing_value_stays_null_and_derived_fields_follow_the_raw_ones(listener):
    await apublish_gpu_updates([gpu_update(util_gpu=None, power_w=None, clocks_event_reasons=0x40 | 0x4, processes=[])])
    gpu = (await listener.receive())["gpus"][0]
    assert gpu["util_gpu"] is None and gpu["power_w"] is None and gpu["fan_pct"] is None
    assert gpu["band"] == "unknown"
    assert gpu["throttle"] == ["thermal", "power"]
    assert gpu["users"] == [] and gpu["processes"] == []


async def test_processes_get_their_researcher_as_owner(listener):
    def make_accounts():
        dana = get_user_model().objects.create_user("dana")
        OsAccount.objects.create(username="d.smith", user=dana)

    await database_sync_to_async(make_accounts)()
    processes = [
        {"pid": 1, "user": "d.smith", "name": "python", "cmdline": "python a.py", "mem_used_mib": 10, "sm_util": 5},
        {"pid": 2, "user": "carol", "name": "python", "cmdline": "python b.py", "mem_used_mib": None},
    ]
    await apublish_gpu_updates([gpu_update(processes=processes)])
    gpu = (await listener.receive())["gpus"][0]
    assert [(p["user"], p["owner"]) for p in gpu["processes"]] == [("d.smith", "dana"), ("carol", None)]
    assert gpu["users"] == ["carol", "dana"]
    assert gpu["processes"][1]["started_at"] is None and gpu["processes"][1]["sm_util"] is None


async def test_a_node_status_from_a_short_lived_event_loop_is_sent_before_the_call_returns(listener):
    # A Celery task runs async_to_sync(apublish_node_status)(...) in a loop that ends right after.
    await asyncio.to_thread(async_to_sync(apublish_node_status), "gpu-03", "offline")
    message = await listener.receive(timeout_s=2)
    assert [(n["hostname"], n["status"]) for n in message["nodes"]] == [("gpu-03", "offline")]


async def test_synchronous_code_publishes_a_node_status_once_its_transaction_commits(listener):
    def flip_and_roll_back():
        with transaction.atomic():
            publish_node_status_on_commit("gpu-04", "online")
            transaction.set_rollback(True)

    def flip():
        with transaction.atomic():
            publish_node_status_on_commit("gpu-04", "draining")

    await database_sync_to_async(flip_and_roll_back)()
    await database_sync_to_async(flip)()
    message = await listener.receive()
    assert [(n["hostname"], n["status"]) for n in message["nodes"]] == [("gpu-04", "draining")]


async def test_each_state_travels_encoded_once_next_to_the_keys_pages_filter_on(listener):
    await apublish_gpu_updates([gpu_update("GPU-live-7", node="gpu-07")])
    await apublish_node_status("gpu-07", "online")
    message = await listener.receive_raw()
    (uuid, hostname, text), (node, node_text) = message["gpus"][0], message["nodes"][0]
    assert (uuid, hostname, node) == ("GPU-live-7", "gpu-07", "gpu-07")
    assert json.loads(text)["util_gpu"] == 97 and json.loads(node_text)["status"] == "online"
