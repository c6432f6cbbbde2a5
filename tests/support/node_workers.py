"""Real Celery node workers for tests: `celery -A fleet worker -Q node.<host>` against the test database."""

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from fleet.celery import node_queue
from tests.support.processes import BASE_DIR, process_environment, wait_for_other_sessions_to_end

# Short intervals so that heartbeats, cancels and lost runs play out in seconds.
FAST_RUN_SETTINGS = {
    "RUN_HEARTBEAT_S": "0.5",
    "RUN_FLUSH_S": "0.2",
    "RUN_CANCEL_GRACE_S": "5",
    "RUN_QUEUE_RETRY_S": "0.5",
    "RUN_RENDEZVOUS_HOST": "127.0.0.1",
    "RUN_RENDEZVOUS_TIMEOUT_S": "120",
}


def unique_hostname(name: str) -> str:
    # Queues live in Redis beyond one test session; a fresh name per session never meets old messages.
    return f"{name}-{uuid.uuid4().hex[:8]}"


class NodeWorker:
    """One node worker process consuming `node.<hostname>`."""

    def __init__(self, hostname: str, log_path: Path, concurrency: int = 2, run_settings: dict | None = None):
        self.hostname = hostname
        self.log_path = log_path
        self.log = open(log_path, "wb")
        argv = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "fleet",
            "worker",
            "-Q",
            node_queue(hostname),
            "-c",
            str(concurrency),
            "-n",
            f"{hostname}@%h",
            "--without-mingle",
            "--without-gossip",
            "--loglevel",
            "INFO",
        ]
        env = process_environment(**(FAST_RUN_SETTINGS if run_settings is None else run_settings))
        self.process = subprocess.Popen(
            argv, env=env, cwd=BASE_DIR, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.wait_until_ready()

    def wait_until_ready(self, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"node worker exited with {self.process.returncode}: {self.log_text()}")
            if b" ready." in self.log_path.read_bytes():
                return
            time.sleep(0.2)
        raise RuntimeError(f"node worker not ready within {timeout_s} s: {self.log_text()}")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        """SIGKILL the worker's main process only, as a crash or the OOM killer would."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # pool processes left by a killed main process
        except ProcessLookupError:
            pass
        self.log.close()


@contextmanager
def running_node_worker(
    name: str, django_db_blocker, tmp_path_factory, run_settings: dict | None = None
) -> Iterator[NodeWorker]:
    """A node worker for a module's tests, stopped after them once its database sessions have ended."""
    hostname = unique_hostname(name)
    with django_db_blocker.unblock():
        worker = NodeWorker(hostname, tmp_path_factory.mktemp("worker") / f"{hostname}.log", run_settings=run_settings)
    try:
        yield worker
    finally:
        worker.stop()
        with django_db_blocker.unblock():
            wait_for_other_sessions_to_end()


def run_processes(run) -> list[psutil.Process]:
    """Every live process started for a run, found by the run id and node its environment carries."""
    marker = str(run.pk)
    hostnames = set(run.nodes.values_list("node__hostname", flat=True))
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            env = proc.environ()
            mine = env.get("FLEET_RUN_ID") == marker and env.get("FLEET_NODE") in hostnames
            if mine and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def wait_until_no_run_processes(run, timeout_s: float = 30.0) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout_s
    left = run_processes(run)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = run_processes(run)
    return left
