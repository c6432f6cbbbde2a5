"""Fixtures for the live fleet view: a listener on the live group and GPU updates as the ingest sends them."""

import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import connections

from monitoring.live import live_group


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
        return await asyncio.wait_for(self.layer.receive(self.channel), timeout_s)

    async def nothing_within(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self.layer.receive(self.channel), seconds)
        except TimeoutError:
            return True
        return False

    async def leave(self) -> None:
        await self.layer.group_discard(live_group(), self.channel)


@pytest.fixture
async def listener():
    joined = await GroupListener().join()
    yield joined
    await joined.leave()


def gpu_update(uuid: str = "GPU-live-0", node: str = "gpu-01", index: int = 0, **values) -> dict:
    """One GPU's update as the ingest hands it to monitoring.live after a commit."""
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
