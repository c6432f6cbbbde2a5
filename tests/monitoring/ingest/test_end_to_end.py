"""A real agent process streaming to the real ASGI server; the server restarts; nothing is lost or stored twice."""

import json
import signal
import subprocess
import sys
import time

import pytest

from inventory.models import Node
from inventory.nodes import add_node
from monitoring.ingest.models import AgentSession
from monitoring.storage.models import GPUSample
from tests.support.processes import BASE_DIR, ServerProcess, process_environment, wait_for_other_sessions_to_end

pytestmark = pytest.mark.django_db(transaction=True)


def stored_seq() -> int:
    session = AgentSession.objects.filter(node__hostname="gpu-e2e").first()
    return session.last_seq if session else 0


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def recorded_frames(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def server(gpu_models, tmp_path):
    servers = []

    def start(port: int | None = None) -> ServerProcess:
        env = process_environment(AGENT_INTERVAL_S="0.2")  # the welcome sets the agent's interval
        started = ServerProcess(env, tmp_path / f"server-{len(servers)}.log", port=port)
        servers.append(started)
        return started

    yield start
    for started in servers:
        started.stop()
    wait_for_other_sessions_to_end()


def test_an_agent_replays_what_a_server_restart_interrupted_and_nothing_is_stored_twice(server, tmp_path):
    _, token = add_node("gpu-e2e")
    first = server()
    record, agent_log = tmp_path / "frames.jsonl", tmp_path / "agent.log"
    argv = [sys.executable, "-m", "tests.monitoring.ingest.recording_agent", str(record)]
    argv += ["--server", f"ws://127.0.0.1:{first.port}", "--token", token, "--hostname", "gpu-e2e"]
    argv += ["--simulate", "2", "--interval", "0.2"]
    with open(agent_log, "wb") as log:
        agent = subprocess.Popen(argv, cwd=BASE_DIR, env=process_environment(), stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: stored_seq() >= 10, 30, "the first frames to be stored")
        first.stop()
        down_from = len(recorded_frames(record))
        time.sleep(1.5)  # the agent keeps sampling into its buffer
        down_until = len(recorded_frames(record))
        server(port=first.port)
        wait_until(lambda: stored_seq() >= down_until + 5, 30, "the replay and new frames to be stored")
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=15)

    frames = recorded_frames(record)
    last = stored_seq()
    sent = {(gpu, round(frame["ts"], 3)) for frame in frames if frame["seq"] <= last for gpu in frame["gpus"]}
    rows = [(s.gpu.uuid, round(s.ts.timestamp(), 3)) for s in GPUSample.objects.select_related("gpu")]
    assert len(rows) == len(set(rows)), "a sample was stored twice"
    assert set(rows) == sent, "samples were lost or invented"
    assert down_until - down_from >= 5, "the agent took frames while the server was down"
    assert len(rows) == 2 * last
    log = agent_log.read_text()
    replays = [int(part.split(" unacked")[0]) for part in log.split("replaying ")[1:]]
    assert len(replays) >= 2 and replays[-1] >= down_until - down_from, log[-2000:]
    assert Node.objects.get(hostname="gpu-e2e").gpus.count() == 2
