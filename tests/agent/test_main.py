import asyncio
import ctypes.util
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from monitoring.agent.metrics import METRIC_KEYS

from .agent_server import AgentServer, until

ROOT = Path(__file__).resolve().parents[2]
AGENT = [sys.executable, "-m", "monitoring.agent"]


def agent_cli(*args, **kwargs):
    return subprocess.run([*AGENT, *args], check=False, cwd=ROOT, capture_output=True, text=True, timeout=60, **kwargs)


def test_once_prints_a_hello_and_a_samples_frame_as_json():
    result = agent_cli("--simulate", "2", "--hostname", "gpu-07", "--gpu-model", "NVIDIA L40S", "--once")

    assert result.returncode == 0, result.stderr
    frames = json.loads(result.stdout)
    hello, samples = frames["hello"], frames["samples"]
    assert hello["type"] == "hello" and hello["protocol"] == 1 and hello["hostname"] == "gpu-07"
    assert [g["name"] for g in hello["gpus"]] == ["NVIDIA L40S", "NVIDIA L40S"]
    assert samples["type"] == "samples" and samples["seq"] == 1
    assert [s["gpu"] for s in samples["samples"]] == [g["uuid"] for g in hello["gpus"]]
    assert set(samples["samples"][0]) == {"ts", "gpu", *METRIC_KEYS, "processes"}


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="this machine has NVML")
def test_without_nvml_it_says_so_and_points_at_simulate():
    result = agent_cli("--once")

    assert result.returncode == 1
    assert "NVML" in result.stderr and "--simulate N" in result.stderr
    assert "Traceback" not in result.stderr


def test_it_refuses_to_start_without_a_server_and_token():
    result = agent_cli("--simulate", "1", env={"PATH": "/usr/bin:/bin"})

    assert result.returncode == 2
    assert "--server and --token" in result.stderr


def test_sigterm_closes_the_connection_cleanly_and_exits_zero():
    async def scenario():
        async with AgentServer() as server:
            proc = await asyncio.create_subprocess_exec(
                *AGENT,
                *("--simulate", "2", "--hostname", "gpu-test", "--interval", "0.05"),
                *("--server", server.url, "--token", "secret"),
                cwd=ROOT,
                stderr=asyncio.subprocess.PIPE,
            )
            try:
                await until(lambda: server.connections and len(server.connections[0].seqs) >= 3, timeout=30)
                proc.send_signal(signal.SIGTERM)
                _, stderr = await asyncio.wait_for(proc.communicate(), 15)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            await until(lambda: server.connections[0].close_code is not None, what="the close")
            return proc.returncode, server.connections[0], stderr.decode()

    returncode, conn, stderr = asyncio.run(scenario())

    assert returncode == 0, stderr
    assert conn.close_code == 1000
    assert conn.authorization == "Bearer secret"
    assert "stopped after" in stderr
