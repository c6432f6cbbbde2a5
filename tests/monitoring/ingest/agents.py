"""A scripted agent for consumer tests: protocol v1 frames over Channels' WebsocketCommunicator."""

import json
import time
import uuid

from channels.testing import WebsocketCommunicator

from fleet.routing import websocket_application
from monitoring.agent.metrics import METRIC_KEYS

H100 = "NVIDIA H100 80GB HBM3"


def gpu_uuid(hostname: str, index: int) -> str:
    return f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{hostname}/{index}')}"


def hello(hostname: str, gpus: int = 2, session: str = "start-1", boot_id: str = "boot-1", **extra) -> dict:
    return {
        "type": "hello",
        "protocol": 1,
        "hostname": hostname,
        "agent_version": "1.0.0",
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "boot_id": boot_id,
        "session": session,
        "gpus": [
            {
                "index": i,
                "uuid": gpu_uuid(hostname, i),
                "name": H100,
                "memory_total_mib": 81559,
                "power_limit_w": 700,
                "pcie_gen": 5,
                "pcie_width": 16,
                "mig": False,
            }
            for i in range(gpus)
        ],
        **extra,
    }


def reading(hostname: str, index: int, ts: float, **values) -> dict:
    sample = {"ts": ts, "gpu": gpu_uuid(hostname, index)}
    sample.update(
        util_gpu=97,
        util_mem=41,
        mem_used_mib=60211,
        temp_c=71,
        power_w=512.3,
        sm_clock_mhz=1980,
        mem_clock_mhz=2619,
        fan_pct=None,
        pcie_tx_kib_s=1200,
        pcie_rx_kib_s=88000,
        ecc_volatile=0,
        clocks_event_reasons=0,
        mem_temp_c=79,
        util_enc=0,
        util_dec=3,
        mem_reserved_mib=529,
        nvlink_tx_kib_s=18_000_000,
        nvlink_rx_kib_s=17_500_000,
        energy_mj=9_876_543_210,
        pcie_replays=0,
        xid_count=0,
        xid_last=0,
        retired_sbe=None,
        retired_dbe=None,
        retired_pending=None,
        remapped_correctable=0,
        remapped_uncorrectable=0,
        remap_pending=0,
        remap_failure=0,
        processes=[
            {
                "pid": 4242 + index,
                "user": "alice",
                "name": "python",
                "cmdline": "python train.py",
                "mem_used_mib": 59000,
                "sm_util": 95,
                "started_at": ts - 600,
            }
        ],
    )
    sample.update(values)
    assert set(METRIC_KEYS) <= set(sample)
    return sample


def samples(hostname: str, seq: int, ts: float | None = None, gpus: int = 2, **values) -> dict:
    ts = round(time.time() if ts is None else ts, 3)
    return {"type": "samples", "seq": seq, "samples": [reading(hostname, i, ts, **values) for i in range(gpus)]}


class Agent:
    """One agent connection: connect with a token, send frames, read what the server answers."""

    def __init__(self, token: str | None, hostname: str):
        headers = [(b"authorization", f"Bearer {token}".encode())] if token is not None else []
        self.hostname = hostname
        self.ws = WebsocketCommunicator(websocket_application(), "/ws/agent/", headers=headers)

    async def connect(self) -> None:
        connected, _ = await self.ws.connect()
        assert connected

    async def start(self, **hello_fields) -> dict:
        """Connect, say hello and return the welcome."""
        await self.connect()
        await self.send(hello(self.hostname, **hello_fields))
        welcome = await self.receive()
        assert welcome["type"] == "welcome", welcome
        return welcome

    async def send(self, frame: dict | str) -> None:
        await self.ws.send_to(text_data=frame if isinstance(frame, str) else json.dumps(frame))

    async def receive(self, timeout: float = 5) -> dict:
        return await self.ws.receive_json_from(timeout)

    async def close_code(self, timeout: float = 5) -> int:
        """The code of the close the server sends next (frames before it are skipped)."""
        while True:
            message = await self.ws.receive_output(timeout)
            if message["type"] == "websocket.close":
                return message.get("code")

    async def nothing_more(self, timeout: float = 0.3) -> bool:
        return await self.ws.receive_nothing(timeout)

    async def stop(self) -> None:
        await self.ws.disconnect()
