"""The agent's cost on a node: CPU (% of one core) and RSS at 1 Hz with 8 simulated GPUs.

Starts a small local websockets server that welcomes and acks, runs
`python -m monitoring.agent --simulate 8` against it as a subprocess and
measures that process with psutil. A second run fills the agent's buffer
(no server, fast interval) to show the memory of a full hour of unacked frames.

    .venv/bin/python bench/agent.py [--seconds 60] [--gpus 8] [--gpu-model "NVIDIA H100 80GB HBM3"] [--no-buffer]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import sys
import time
from pathlib import Path

import psutil
from websockets.asyncio.server import serve

ROOT = Path(__file__).resolve().parents[1]
WARM_UP_S = 5.0
MIB = 1024 * 1024


class AckingServer:
    """Welcomes the agent and acks every samples frame, counting what arrives."""

    def __init__(self) -> None:
        self.frames = 0
        self.bytes = 0

    async def handle(self, ws) -> None:
        await ws.recv()
        await ws.send(json.dumps({"type": "welcome", "node": "bench", "interval_s": 1.0, "resume_seq": 0}))
        async for message in ws:
            self.frames += 1
            self.bytes += len(message)
            await ws.send(json.dumps({"type": "ack", "seq": json.loads(message)["seq"]}))


async def start_agent(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "monitoring.agent",
        *args,
        cwd=ROOT,
        stderr=asyncio.subprocess.PIPE,
    )


async def stop_agent(proc: asyncio.subprocess.Process) -> int:
    proc.send_signal(signal.SIGTERM)
    await asyncio.wait_for(proc.communicate(), 15)
    return proc.returncode


async def steady_state(seconds: float, gpus: int, model: tuple[str, ...] = ()) -> dict:
    server = AckingServer()
    async with serve(server.handle, "127.0.0.1", 0) as ws_server:
        port = ws_server.sockets[0].getsockname()[1]
        proc = await start_agent(
            *("--simulate", str(gpus), "--hostname", "bench-node", "--interval", "1.0", *model),
            *("--server", f"ws://127.0.0.1:{port}", "--token", "bench", "--log-level", "WARNING"),
        )
        ps = psutil.Process(proc.pid)
        while server.frames == 0:
            await asyncio.sleep(0.1)
        await asyncio.sleep(WARM_UP_S)
        cpu_start, wall_start, frames_start, bytes_start = _cpu(ps), time.monotonic(), server.frames, server.bytes
        rss = []
        while time.monotonic() - wall_start < seconds:
            rss.append(ps.memory_info().rss)
            await asyncio.sleep(1.0)
        cpu, wall = _cpu(ps) - cpu_start, time.monotonic() - wall_start
        frames, sent = server.frames - frames_start, server.bytes - bytes_start
        returncode = await stop_agent(proc)
    return {
        "cpu_pct": 100 * cpu / wall,
        "rss_max_mib": max(rss) / MIB,
        "rss_end_mib": rss[-1] / MIB,
        "frames": frames,
        "wall_s": wall,
        "frame_kib": sent / max(frames, 1) / 1024,
        "exit_code": returncode,
    }


async def full_buffer(gpus: int) -> float:
    """RSS once the default 3600-frame buffer is full and dropping."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = await start_agent(
        *("--simulate", str(gpus), "--hostname", "bench-node", "--interval", "0.01"),
        *("--server", f"ws://127.0.0.1:{port}", "--token", "bench"),
    )
    async for line in proc.stderr:
        if b"frame buffer full" in line:
            break
    rss = psutil.Process(proc.pid).memory_info().rss / MIB
    proc.send_signal(signal.SIGTERM)
    await asyncio.wait_for(proc.wait(), 15)
    return rss


def _cpu(ps: psutil.Process) -> float:
    times = ps.cpu_times()
    return times.user + times.system


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--gpu-model", help="simulated model (default: the one the host name picks)")
    parser.add_argument("--no-buffer", action="store_true", help="skip the full-buffer run")
    args = parser.parse_args()

    steady = await steady_state(args.seconds, args.gpus, ("--gpu-model", args.gpu_model) if args.gpu_model else ())
    full_rss = float("nan") if args.no_buffer else await full_buffer(args.gpus)

    print(f"Machine: {os.cpu_count()} cores ({_cpu_model()}), Python {platform.python_version()}")
    print(
        f"Agent: --simulate {args.gpus} at 1 Hz, {steady['wall_s']:.0f} s measured after a {WARM_UP_S:.0f} s warm-up\n"
    )
    print("| figure | value | budget |")
    print("|---|---|---|")
    print(f"| CPU, % of one core | {steady['cpu_pct']:.2f} % | 1 % |")
    print(f"| RSS, max while streaming | {steady['rss_max_mib']:.1f} MiB | 60 MiB |")
    print(f"| RSS with a full buffer (3600 unacked frames) | {full_rss:.1f} MiB | 60 MiB |")
    print(f"| frames acked in the window | {steady['frames']} | |")
    print(f"| mean frame size | {steady['frame_kib']:.1f} KiB | 1024 KiB |")
    print(f"| exit code after SIGTERM | {steady['exit_code']} | 0 |")


if __name__ == "__main__":
    asyncio.run(main())
