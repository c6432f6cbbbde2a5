"""kill -9 of the web server mid-stream with two real agents connected: after a restart they reconnect and replay,
and every frame each agent took up to its node's resume point is stored exactly once."""

import json
import signal
import subprocess
import sys
import time

import pytest

from inventory.nodes import add_node
from monitoring.ingest.models import AgentSession
from monitoring.storage.models import GPUSample
from tests.support.processes import BASE_DIR, ServerProcess, process_environment, wait_for_other_sessions_to_end

pytestmark = pytest.mark.django_db(transaction=True)

NODES = ("gpu-kill-a", "gpu-kill-b")


def settled_seq(hostname: str) -> int:
    session = AgentSession.objects.filter(node__hostname=hostname).first()
    return session.last_seq if session else 0


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def recorded(path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


@pytest.fixture
def started(gpu_models, tmp_path):
    """Start servers and recording agents; everything still running is stopped after the test."""
    servers, agents = [], []

    def server(port: int | None = None) -> ServerProcess:
        env = process_environment(AGENT_INTERVAL_S="0.2")  # the welcome sets the agents' interval
        servers.append(ServerProcess(env, tmp_path / f"server-{len(servers)}.log", port=port))
        return servers[-1]

    def agent(port: int, hostname: str, token: str):
        argv = [sys.executable, "-m", "tests.monitoring.ingest.recording_agent", str(tmp_path / f"{hostname}.jsonl")]
        argv += ["--server", f"ws://127.0.0.1:{port}", "--token", token, "--hostname", hostname]
        argv += ["--simulate", "2", "--interval", "0.2"]
        with open(tmp_path / f"{hostname}.log", "wb") as log:
            agents.append(subprocess.Popen(argv, cwd=BASE_DIR, env=process_environment(), stdout=log, stderr=log))

    yield server, agent
    for process in agents:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
    for running in servers:
        running.stop()
    wait_for_other_sessions_to_end()


def test_agents_replay_into_a_restarted_server_after_kill_9_and_nothing_is_lost_or_stored_twice(started, tmp_path):
    server, agent = started
    tokens = {hostname: add_node(hostname)[1] for hostname in NODES}
    first = server()
    for hostname in NODES:
        agent(first.port, hostname, tokens[hostname])
    wait_until(lambda: all(settled_seq(h) >= 10 for h in NODES), 60, "both agents' first frames to be stored")

    first.process.send_signal(signal.SIGKILL)
    first.process.wait(timeout=30)
    taken_at_kill = {h: len(recorded(tmp_path / f"{h}.jsonl")) for h in NODES}
    # The agents keep sampling into their buffers while no server answers.
    wait_until(
        lambda: all(len(recorded(tmp_path / f"{h}.jsonl")) >= taken_at_kill[h] + 5 for h in NODES),
        30,
        "the agents to take frames while the server is down",
    )
    taken_while_down = {h: len(recorded(tmp_path / f"{h}.jsonl")) for h in NODES}
    server(port=first.port)
    wait_until(
        lambda: all(settled_seq(h) >= taken_while_down[h] + 5 for h in NODES),
        60,
        "the replays and new frames to be stored",
    )

    for hostname in NODES:
        frames = recorded(tmp_path / f"{hostname}.jsonl")
        session = AgentSession.objects.get(node__hostname=hostname)
        rows = [
            (sample.gpu.uuid, round(sample.ts.timestamp(), 3))
            for sample in GPUSample.objects.filter(gpu__node__hostname=hostname).select_related("gpu")
        ]
        settled = {(gpu, round(f["ts"], 3)) for f in frames if f["seq"] <= session.last_seq for gpu in f["gpus"]}
        taken = {(gpu, round(f["ts"], 3)) for f in frames for gpu in f["gpus"]}
        assert len(rows) == len(set(rows)), f"{hostname}: a sample was stored twice"
        assert settled <= set(rows), f"{hostname}: {len(settled - set(rows))} samples up to resume_seq were lost"
        assert set(rows) <= taken, f"{hostname}: samples were invented"
        assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1)), f"{hostname}: the agent's seqs have a gap"
        assert session.last_seq >= taken_while_down[hostname] + 5
