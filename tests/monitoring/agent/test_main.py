import asyncio
import ctypes.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from monitoring.agent.metrics import METRIC_KEYS

from .agent_server import AgentServer, until

ROOT = Path(__file__).resolve().parents[3]
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
    assert set(samples["samples"][0]) == {"ts", "gpu", *METRIC_KEYS, "nvlink", "processes"}


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="this machine has NVML")
def test_without_nvml_it_says_so_and_points_at_simulate():
    result = agent_cli("--once")

    assert result.returncode == 1
    assert "NVML" in result.stderr and "--simulate N" in result.stderr
    assert "Traceback" not in result.stderr


def test_it_refuses_to_start_without_a_server_and_token():
    result = agent_cli("--simulate", "1", env={"PATH": "/usr/bin:/bin"})

    assert result.returncode == 2
    assert "--server (or $FLEET_AGENT_SERVER) and a token (--token-file, or $FLEET_AGENT_TOKEN)" in result.stderr


def test_it_names_a_token_file_it_cannot_read(tmp_path):
    result = agent_cli("--simulate", "1", "--server", "ws://127.0.0.1:9", "--token-file", str(tmp_path / "missing"))

    assert result.returncode == 2
    assert f"cannot read the token file {tmp_path / 'missing'}: No such file or directory" in result.stderr


def test_it_refuses_a_token_file_with_more_than_the_token(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("FLEET_AGENT_TOKEN=abc\nsecond line\n")

    result = agent_cli("--simulate", "1", "--server", "ws://127.0.0.1:9", "--token-file", str(token_file))

    assert result.returncode == 2
    assert "must hold the node token alone, on one line" in result.stderr


def test_it_refuses_a_token_given_twice(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("abc\n")

    result = agent_cli("--simulate", "1", "--server", "ws://x:9", "--token-file", str(token_file), "--token", "abc")

    assert result.returncode == 2
    assert "--token-file or --token, not both" in result.stderr


def streamed_authorization(*args, env=None):
    """The Authorization header a real server saw from an agent started with these arguments, and its stderr.

    With ``env``, the server's URL goes into it as FLEET_AGENT_SERVER instead of --server.
    """

    async def scenario():
        async with AgentServer() as server:
            where = ["--server", server.url] if env is None else []
            proc = await asyncio.create_subprocess_exec(
                *AGENT,
                *("--simulate", "1", "--hostname", "gpu-token", "--interval", "0.05", *where),
                *args,
                cwd=ROOT,
                env=None if env is None else {**env, "FLEET_AGENT_SERVER": server.url},
                stderr=asyncio.subprocess.PIPE,
            )
            try:
                await until(lambda: server.connections and server.connections[0].seqs, timeout=30)
                proc.send_signal(signal.SIGTERM)
                _, stderr = await asyncio.wait_for(proc.communicate(), 15)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            return server.connections[0].authorization, stderr.decode()

    return asyncio.run(scenario())


@pytest.mark.parametrize("mode, warned", [(0o600, False), (0o644, True)])
def test_the_token_comes_from_a_file_and_others_reading_it_is_warned_about(tmp_path, mode, warned):
    token_file = tmp_path / "agent.token"
    token_file.write_text("file-secret\n")
    token_file.chmod(mode)

    authorization, stderr = streamed_authorization("--token-file", str(token_file))

    assert authorization == "Bearer file-secret"
    warning = f"warning: the token file {token_file} is readable by other users; chmod 600 it"
    assert (warning in stderr) is warned and stderr.count("warning") == int(warned)


def test_the_token_and_server_come_from_the_environment():
    env = {**os.environ, "FLEET_AGENT_TOKEN": "env-secret"}

    authorization, stderr = streamed_authorization(env=env)

    assert authorization == "Bearer env-secret"
    assert "warning" not in stderr


def test_a_token_on_the_command_line_still_works_but_warns_that_ps_shows_it():
    authorization, stderr = streamed_authorization("--token", "argv-secret")

    assert authorization == "Bearer argv-secret"
    assert "warning: --token is visible to every user of this node through ps" in stderr


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
