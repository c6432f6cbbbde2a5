"""A run's process group on a node: started in its own session, read line by line, ended without orphans.

torchrun starts each worker in a session of its own, so ending a run means ending the launcher's
group *and* every process descended from it. The launcher dies with the node worker process that
started it (PR_SET_PDEATHSIG), and that worker process adopts whatever the launcher leaves behind
(PR_SET_CHILD_SUBREAPER), so nothing a run starts can outlive the worker.
"""

import ctypes
import os
import queue
import signal
import subprocess
import threading
import time

import psutil

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
MAX_LINE_CHARS = 4000
_libc = ctypes.CDLL(None, use_errno=True)


def adopt_orphans() -> None:
    """Make this process the reaper of its descendants' orphans, so they stay in its tree."""
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _die_with(parent_pid: int):
    def preexec() -> None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before the line above took effect
            os._exit(1)

    return preexec


class ProcessGroup:
    """A launcher started in a new session whose merged stdout and stderr arrive as lines on a queue."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, account=None):
        """``account`` (training.node.run_as.Account): the uid, gid and groups to run as; None keeps ours.

        Popen switches groups, gid and uid before preexec_fn runs, so the parent-death signal set there
        survives the switch (a credential change clears it).
        """
        switch = {}
        if account is not None:
            switch = {"user": account.uid, "group": account.gid, "extra_groups": list(account.groups)}
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()),
            **switch,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, name=f"run-output-{self.proc.pid}", daemon=True)
        self.reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        with self.proc.stdout:
            for raw in self.proc.stdout:
                self.lines.put(raw.decode("utf-8", "replace").rstrip("\r\n")[:MAX_LINE_CHARS])
        self.lines.put(None)

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def members(self) -> list[psutil.Process]:
        """The launcher and everything it started (still alive)."""
        try:
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def terminate(self) -> None:
        """SIGTERM to the launcher's group: torchrun and the Hogwild launcher pass it on to their workers."""
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        """SIGKILL to the group and to every descendant (torchrun's workers sit in sessions of their own)."""
        members = self.members()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for member in members:
            try:
                member.kill()
            except psutil.NoSuchProcess:
                pass

    def stop(self, grace_s: float) -> int:
        """End the whole tree: SIGTERM, then SIGKILL after ``grace_s``; returns the launcher's exit code."""
        members = self.members()
        # psutil must never wait on the launcher itself: reaping it there would lose its exit code.
        others = [member for member in members if member.pid != self.proc.pid]
        deadline = time.monotonic() + grace_s
        self.terminate()
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        _, alive = psutil.wait_procs(others, timeout=max(0.0, deadline - time.monotonic()))
        if alive or self.proc.poll() is None:
            self.kill()
        # A launcher that exits at once may leave workers it had no time to stop.
        self.kill_stragglers(others)
        return self.wait()

    def kill_stragglers(self, members: list[psutil.Process]) -> None:
        for member in members:
            try:
                if member.is_running() and member.status() != psutil.STATUS_ZOMBIE:
                    member.kill()
            except psutil.NoSuchProcess:
                pass

    def wait(self) -> int:
        code = self.proc.wait()
        self.reader.join(timeout=5)
        return code


def kill_descendants(grace_s: float = 2.0) -> list[int]:
    """End every process below this one (orphans it adopted included); returns the pids it had to end."""
    children = psutil.Process().children(recursive=True)
    for child in children:
        try:
            child.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(children, timeout=grace_s)
    for child in alive:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    # wait_procs reaps those that are our children (orphans we adopted included).
    psutil.wait_procs(alive, timeout=grace_s)
    return [child.pid for child in children]
