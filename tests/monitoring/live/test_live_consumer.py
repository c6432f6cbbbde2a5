"""/ws/live/: logged-in browsers get a snapshot of what they watch, then coalesced updates."""

import asyncio
import threading
import time

import pytest
from asgiref.sync import sync_to_async

from monitoring.live.fanout import apublish_gpu_updates, apublish_node_status
from tests.monitoring.live.conftest import browser_socket, gpu_update

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("thread_connections_closed")]


@pytest.fixture(autouse=True)
def slow_tick(settings):
    settings.LIVE_TICK_S = 0.5


async def subscribed(user, **message) -> tuple:
    socket = await browser_socket(user)
    connected, _ = await socket.connect()
    assert connected
    await socket.send_json_to({"type": "subscribe", **message})
    return socket, await socket.receive_json_from(timeout=10)


async def test_an_anonymous_visitor_is_refused(fleet):
    socket = await browser_socket(None)
    connected, code = await socket.connect()
    assert not connected and code == 4401
    await socket.disconnect()


async def test_a_page_from_another_site_is_refused(fleet, cast):
    socket = await browser_socket(cast["owner"], origin="https://evil.example.com")
    connected, _ = await socket.connect()
    assert not connected
    await socket.disconnect()


async def test_a_researcher_gets_a_snapshot_of_the_fleet(fleet, cast):
    socket, snapshot = await subscribed(cast["owner"], scope="fleet")
    assert snapshot["type"] == "snapshot" and snapshot["scope"] == "fleet"
    assert [node["hostname"] for node in snapshot["nodes"]] == ["gpu-01", "gpu-02"]
    busy = snapshot["nodes"][0]["gpus"][0]
    assert busy["uuid"] == "GPU-live-0" and busy["util_gpu"] == 97 and busy["model"] == "H100 SXM"
    assert busy["processes"][0]["owner"] == "alice" and busy["users"] == ["alice"]
    assert snapshot["summary"] == {
        "gpus": 3,
        "busy": 1,
        "idle": 1,
        "offline": 1,
        "utilization": 48.5,
        "power_w": 582.8,
    }
    await socket.disconnect()


async def test_many_publishes_within_a_tick_reach_the_page_as_one_message_with_the_latest_state(fleet, cast):
    socket, _ = await subscribed(cast["owner"], scope="fleet")
    await apublish_gpu_updates([gpu_update(util_gpu=3)])
    first = await socket.receive_json_from(timeout=5)
    for util in (10, 20, 30, 40):
        await apublish_gpu_updates([gpu_update(util_gpu=util)])
    await apublish_node_status("gpu-02", "online")

    second = await socket.receive_json_from(timeout=5)

    assert first["type"] == "update" and [g["util_gpu"] for g in first["gpus"]] == [3]
    assert [g["util_gpu"] for g in second["gpus"]] == [40]
    assert [(n["hostname"], n["status"]) for n in second["nodes"]] == [("gpu-02", "online")]
    assert await socket.receive_nothing(timeout=0.8)
    await socket.disconnect()


async def test_a_node_page_gets_only_that_nodes_updates(fleet, cast):
    socket, snapshot = await subscribed(cast["owner"], scope="node", node="gpu-02")
    assert [node["hostname"] for node in snapshot["nodes"]] == ["gpu-02"]
    await apublish_gpu_updates([gpu_update("GPU-live-0", node="gpu-01")])
    await apublish_node_status("gpu-01", "offline")
    assert await socket.receive_nothing(timeout=1.0)

    await apublish_gpu_updates([gpu_update("GPU-live-2", node="gpu-02", util_gpu=12)])
    update = await socket.receive_json_from(timeout=5)
    assert [g["uuid"] for g in update["gpus"]] == ["GPU-live-2"] and update["nodes"] == []
    await socket.disconnect()


async def test_a_gpu_page_gets_only_that_gpu_and_its_node(fleet, cast):
    socket, snapshot = await subscribed(cast["teammate"], scope="gpu", gpu="GPU-live-1")
    assert [[g["uuid"] for g in node["gpus"]] for node in snapshot["nodes"]] == [["GPU-live-1"]]
    await apublish_gpu_updates([gpu_update("GPU-live-0"), gpu_update("GPU-live-1", index=1, util_gpu=66)])
    await apublish_node_status("gpu-01", "draining")
    await apublish_node_status("gpu-02", "online")

    update = await socket.receive_json_from(timeout=5)

    assert [(g["uuid"], g["util_gpu"]) for g in update["gpus"]] == [("GPU-live-1", 66)]
    assert [n["hostname"] for n in update["nodes"]] == ["gpu-01"]
    await socket.disconnect()


async def test_a_page_gets_nothing_before_it_subscribes(fleet, cast):
    socket = await browser_socket(cast["owner"])
    await socket.connect()
    await apublish_gpu_updates([gpu_update()])
    assert await socket.receive_nothing(timeout=1.0)
    await socket.disconnect()


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"type": "subscribe"}', "scope: This field is required."),
        ('{"type": "subscribe", "scope": "rack"}', 'scope: "rack" is not a valid choice.'),
        ('{"type": "unsubscribe", "scope": "fleet"}', 'type: "unsubscribe" is not a valid choice.'),
        ('{"type": "subscribe", "scope": "node"}', "node: a node scope needs the node to watch"),
        ('{"type": "subscribe", "scope": "node", "node": "gpu-99"}', "no node 'gpu-99' in the fleet"),
        ('{"type": "subscribe", "scope": "gpu", "gpu": "GPU-nope"}', "no gpu 'GPU-nope' in the fleet"),
        ('{"type": "subscribe", "scope": "fleet", "pad": "' + "x" * 5000 + '"}', "at most 4096 characters"),
    ],
)
async def test_a_bad_message_gets_a_clear_error_and_the_socket_stays_open(fleet, cast, message, error):
    socket = await browser_socket(cast["owner"])
    await socket.connect()
    await socket.send_to(text_data=message)
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "error" and error in reply["detail"]

    await socket.send_json_to({"type": "subscribe", "scope": "fleet"})
    assert (await socket.receive_json_from(timeout=5))["type"] == "snapshot"
    await socket.disconnect()


async def test_a_failed_subscription_keeps_the_previous_one(fleet, cast):
    socket, _ = await subscribed(cast["owner"], scope="node", node="gpu-01")
    await socket.send_json_to({"type": "subscribe", "scope": "node", "node": "gpu-99"})
    assert (await socket.receive_json_from(timeout=5))["type"] == "error"
    await apublish_gpu_updates([gpu_update("GPU-live-0", util_gpu=55)])
    update = await socket.receive_json_from(timeout=5)
    assert [g["util_gpu"] for g in update["gpus"]] == [55]
    await socket.disconnect()


async def test_a_busy_database_thread_does_not_hold_back_live_updates(fleet, cast):
    """The thread that runs synchronous views and ORM calls may be busy; live updates go out regardless."""
    socket, _ = await subscribed(cast["owner"], scope="fleet")
    await apublish_gpu_updates([gpu_update(util_gpu=54)])  # looks up the processes' owners, then caches them
    assert [g["util_gpu"] for g in (await socket.receive_json_from(timeout=5))["gpus"]] == [54]
    release = threading.Event()
    busy = asyncio.ensure_future(sync_to_async(release.wait, thread_sensitive=True)(10))
    await asyncio.sleep(0.1)
    try:
        started = time.monotonic()
        await apublish_gpu_updates([gpu_update(util_gpu=55)])
        update = await socket.receive_json_from(timeout=3)
        waited = time.monotonic() - started
    finally:
        release.set()
        await busy
    assert [g["util_gpu"] for g in update["gpus"]] == [55]
    assert waited < 2.0  # one coalescing tick (0.5 s here), not the 10 s the database thread is held
    await socket.disconnect()
