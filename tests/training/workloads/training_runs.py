"""Running real training commands from the repository root and reading their events."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

import psutil

from training.workloads import event_lines
from training.workloads.run_env import run_env

REPO = Path(__file__).resolve().parents[3]
RUN_TIMEOUT = 120


def parse_events(stdout: str) -> list[dict]:
    return [event for line in stdout.splitlines() if (event := event_lines.parse_event(line)) is not None]


def run_to_end(argv: list[str], timeout: float = RUN_TIMEOUT) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """Run a training command from the repository root; its result and events."""
    done = subprocess.run(argv, cwd=REPO, env=run_env(), capture_output=True, text=True, timeout=timeout, check=False)
    return done, parse_events(done.stdout)


def only(found: list[dict], kind: str) -> dict:
    matching = [event for event in found if event["event"] == kind]
    assert len(matching) == 1, f"expected one {kind} event, got {matching}"
    return matching[0]


class Running:
    """A training command started in its own session, read line by line as it runs."""

    def __init__(self, argv: list[str]) -> None:
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            argv, cwd=REPO, env=run_env(), stdout=subprocess.PIPE, stderr=self.stderr, text=True, start_new_session=True
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, kind: str, timeout: float = RUN_TIMEOUT) -> dict:
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no {kind} event within {timeout} s") from None
            if line is None:
                raise AssertionError(f"exited ({self.proc.wait()}) before a {kind} event: {self.stderr_text()}")
            event = event_lines.parse_event(line)
            if event and event["event"] == kind:
                return event

    def finish(self, timeout: float = RUN_TIMEOUT) -> list[dict]:
        """Wait for the run to end; the events it printed that no ``wait_for`` took."""
        self.proc.wait(timeout=timeout)
        found = []
        while (line := self.lines.get(timeout=timeout)) is not None:
            if (event := event_lines.parse_event(line)) is not None:
                found.append(event)
        return found

    def tree(self) -> list[psutil.Process]:
        """The launcher and every live process it started. torchrun puts each
        worker in a session of its own, so the tree, not the process group, is
        what a run consists of."""
        root = psutil.Process(self.proc.pid)
        return [root, *(p for p in root.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE)]

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-3000:]

    def kill(self) -> None:
        """Leave nothing behind, whatever the test did."""
        try:
            members = self.tree()
        except psutil.NoSuchProcess:
            members = []
        for member in members:
            try:
                member.kill()
            except psutil.NoSuchProcess:
                pass
        self.proc.wait()


def assert_stops_cleanly(running: Running, target: str) -> None:
    """SIGTERM to the run's process group (``group``) or to its first process
    only (``launcher``) ends every process of the run, with a failing exit code."""
    members = running.tree()
    assert len(members) >= 3, f"the run should have started its workers: {members}"
    if target == "group":
        os.killpg(running.proc.pid, signal.SIGTERM)
    else:
        os.kill(running.proc.pid, signal.SIGTERM)
    code = running.proc.wait(timeout=60)
    assert code != 0, "a stopped run must not report success"
    _, alive = psutil.wait_procs(members, timeout=30)
    alive = [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"left behind: {alive}"


NUMBER = (int, float)
REQUIRED = {
    "env": {"python": str, "torch": str, "host": str, "strategy": str, "world_size": int},
    "first_step": {"ts": NUMBER},
    "checkpoint": {"step": int, "bytes": int, "seconds": NUMBER, "reason": str, "ts": NUMBER},
    "progress": {"step": int, "epoch": int, "samples_per_s": NUMBER + (type(None),), "ts": NUMBER},
    "done": {"samples_per_s": NUMBER + (type(None),)},
}


def assert_follows_protocol(found: list[dict], strategy: str, world_size: int) -> None:
    kinds = [event["event"] for event in found]
    assert kinds[0] == "env" and kinds[-1] == "done", kinds
    assert kinds.count("env") == kinds.count("first_step") == kinds.count("done") == 1, kinds
    assert kinds.index("first_step") < kinds.index("progress")
    for event in found:
        for key, kind in REQUIRED[event["event"]].items():
            assert isinstance(event[key], kind), (key, event)
    env = found[0]
    assert env["strategy"] == strategy and env["world_size"] == world_size
    assert env["cuda"] is None or isinstance(env["cuda"], str)
    assert env["git_commit"] is None or len(env["git_commit"]) == 40
    progress = [event for event in found if event["event"] == "progress"]
    steps = [event["step"] for event in progress]
    assert steps == sorted(steps)
    for event in progress:
        assert event["accuracy"] is None or 0 <= event["accuracy"] <= 1
        assert event["loss"] is None or event["loss"] >= 0


def final_accuracy(found: list[dict]) -> float:
    return found[-1]["accuracy"]
