"""A real Celery worker process on the test database, for tests of tasks that must cross a process boundary."""

import subprocess
import sys
import time
from pathlib import Path

from fleet.celery import app
from tests.support.processes import BASE_DIR


def purge(queues: list[str]) -> None:
    """Drop messages earlier tests left in these queues (their rows are gone)."""
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        for queue in queues:
            try:
                channel.queue_purge(queue)
            except Exception:  # a queue that was never declared has nothing to purge
                pass


class CeleryWorker:
    """`celery -A fleet worker -Q <queues>` (solo pool), started and stopped by a fixture."""

    def __init__(self, queues: list[str], env: dict, log_path: Path, name: str = "tests"):
        purge(queues)
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
            ",".join(queues),
            "-P",
            "solo",
            "-n",
            f"{name}@%h",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
        ]
        self.process = subprocess.Popen(argv, env=env, cwd=BASE_DIR, stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_ready()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the worker exited with {self.process.returncode}:\n{self.output()}")
            if " ready." in self.output():
                return
            time.sleep(0.2)
        raise RuntimeError(f"the worker was not ready within {timeout_s} s:\n{self.output()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def wait_for(predicate, timeout_s: float = 30.0, what: str = "the condition"):
    """Poll until predicate() is truthy; return its value."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout_s} s")
