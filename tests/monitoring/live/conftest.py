"""Fixtures for the live fleet view: a listener on the live group and GPU updates as the ingest sends them."""

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connections
from django.test import Client

from fleet.routing import websocket_application
from monitoring.live.fanout import live_group
from tests.support.gpus import make_gpu


class GroupListener:
    """A channel in the live group, as a browser consumer has."""

    def __init__(self):
        self.layer = get_channel_layer()
        self.channel = None

    async def join(self) -> "GroupListener":
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(live_group(), self.channel)
        return self

    async def receive(self, timeout_s: float = 5.0) -> dict:
        """The next group message, its pre-encoded GPU states and node statuses decoded."""
        return decoded(await self.receive_raw(timeout_s))

    async def receive_raw(self, timeout_s: float = 5.0) -> dict:
        return await asyncio.wait_for(self.layer.receive(self.channel), timeout_s)

    async def nothing_within(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self.layer.receive(self.channel), seconds)
        except TimeoutError:
            return True
        return False

    async def leave(self) -> None:
        await self.layer.group_discard(live_group(), self.channel)


def decoded(message: dict) -> dict:
    gpus = [json.loads(entry[-1]) for entry in message["gpus"]]
    return {**message, "gpus": gpus, "nodes": [json.loads(entry[-1]) for entry in message["nodes"]]}


@pytest.fixture
async def listener():
    joined = await GroupListener().join()
    yield joined
    await joined.leave()


def gpu_update(uuid: str = "GPU-live-0", node: str = "gpu-01", index: int = 0, **values) -> dict:
    """One GPU's update as the ingest hands it to monitoring.live.fanout after a commit."""
    update = {
        "uuid": uuid,
        "node": node,
        "index": index,
        "ts": 1795000000.0,
        "util_gpu": 97,
        "util_mem": 41,
        "mem_used_mib": 60211,
        "temp_c": 71,
        "power_w": 512.3,
        "sm_clock_mhz": 1980,
        "mem_clock_mhz": 2619,
        "fan_pct": None,
        "pcie_tx_kib_s": 1200,
        "pcie_rx_kib_s": 88000,
        "ecc_volatile": 0,
        "clocks_event_reasons": None,
        "memory_total_mib": 81559,
        "processes": [
            {
                "pid": 4242,
                "user": "alice",
                "name": "python",
                "cmdline": "python train.py",
                "mem_used_mib": 59000,
                "sm_util": 95,
                "started_at": 1794990000.0,
            }
        ],
    }
    update.update(values)
    return update


@pytest.fixture
async def thread_connections_closed():
    """Close the connection the ORM's worker thread opened, so the test database can be dropped at the end."""
    yield
    await database_sync_to_async(connections.close_all)()


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def browser_socket(user=None, origin: str = "http://127.0.0.1:8000") -> WebsocketCommunicator:
    """A connected /ws/live/ socket through the whole websocket stack (origin check, session auth)."""
    headers = [(b"origin", origin.encode()), (b"host", b"127.0.0.1:8000")]
    if user is not None:
        cookie = await database_sync_to_async(session_cookie)(user)
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    return WebsocketCommunicator(websocket_application(), "/ws/live/", headers=headers)


def make_fleet(status: str = "online") -> dict:
    """Two nodes: gpu-01 (online) with two reporting H100s (one busy, owned by alice), gpu-02 offline and silent."""
    from django.utils import timezone

    from inventory.models import GPU, GPUModel, Node

    h100 = GPUModel.objects.get(name="H100 SXM")
    busy_node = Node.objects.create(hostname="gpu-01", status=status, last_seen=timezone.now())
    silent_node = Node.objects.create(hostname="gpu-02", status="offline")
    state = {k: v for k, v in gpu_update().items() if k not in ("uuid", "node", "index", "ts", "memory_total_mib")}
    busy = make_gpu(
        node=busy_node,
        index=0,
        uuid="GPU-live-0",
        model=h100,
        name="NVIDIA H100 80GB HBM3",
        memory_total_mib=81559,
        last_sample_at=timezone.now(),
        **state,
    )
    idle = make_gpu(
        node=busy_node,
        index=1,
        uuid="GPU-live-1",
        model=h100,
        memory_total_mib=81559,
        last_sample_at=timezone.now(),
        util_gpu=0,
        mem_used_mib=0,
        power_w=70.5,
    )
    silent = GPU.objects.create(node=silent_node, index=0, uuid="GPU-live-2")
    return {"busy": busy, "idle": idle, "silent": silent, "busy_node": busy_node, "silent_node": silent_node}


@pytest.fixture
async def fleet(gpu_models, thread_connections_closed):
    # Committed rows are seen by the session's server (tests/conftest.py asgi_server), whose ingest flips
    # a silent online node offline after 3 s and tells the live group; a draining node stays as it is.
    return await database_sync_to_async(make_fleet)("draining")


def store_samples(samples: list) -> None:
    """Store raw GPUSample rows, making the daily partitions they fall in first (as the ingest does)."""
    from datetime import UTC

    from monitoring.storage.models import GPUSample
    from monitoring.storage.partitions import create_missing

    create_missing({sample.ts.astimezone(UTC).date() for sample in samples})
    GPUSample.objects.bulk_create(samples)
