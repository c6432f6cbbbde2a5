"""Who runs a process on the GPU: OS user, name, command line, start time, and the fleet run it belongs to.

psutil is used when installed; otherwise /proc is read directly. A process
that has gone or that this agent may not see (another PID namespace) gives
None fields, never a guess.
"""

from __future__ import annotations

import functools
import os
import pwd

try:
    import psutil
except ImportError:  # optional: the agent must run with stdlib + NVML only
    psutil = None

CMDLINE_MAX_CHARS = 4096
# The node worker sets this on every process it starts (training/node/environment.py); its children inherit it.
RUN_ENV = "FLEET_RUN_ID"
ENVIRON_MAX_BYTES = 1 << 20


def process_info(pid: int) -> dict:
    """user, name, cmdline, started_at (UNIX seconds) and run (the fleet run's id) of pid, None where unknown."""
    info = _from_psutil(pid) if psutil is not None else _from_proc(pid)
    info["run"] = run_of(pid)
    return info


def run_of(pid: int) -> int | None:
    """The fleet run a process belongs to, from its environment; None when it names none or we may not read it.

    Only a claim: the server believes it for a run placed on the GPU the process uses.
    """
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read(ENVIRON_MAX_BYTES)
    except OSError:
        return None
    return parse_run(environ)


def parse_run(environ: bytes) -> int | None:
    prefix = RUN_ENV.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            value = entry[len(prefix) :]
            return int(value) if value.isdigit() and 0 < len(value) <= 18 and int(value) > 0 else None
    return None


def _from_psutil(pid: int) -> dict:
    info = {"user": None, "name": None, "cmdline": None, "started_at": None}
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            info["name"] = proc.name() or None
            info["started_at"] = round(proc.create_time(), 3)
            info["user"] = _user_of(proc.uids().real)
            info["cmdline"] = _join(proc.cmdline())
    except (psutil.Error, OSError):
        pass
    return info


def _from_proc(pid: int) -> dict:
    base = f"/proc/{pid}"
    return {
        "user": _proc_user(base),
        "name": _read(f"{base}/comm"),
        "cmdline": _proc_cmdline(base),
        "started_at": _proc_started_at(base),
    }


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _proc_user(base: str) -> str | None:
    for line in (_read(f"{base}/status") or "").splitlines():
        if line.startswith("Uid:"):
            return _user_of(int(line.split()[1]))
    return None


def _user_of(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _proc_cmdline(base: str) -> str | None:
    raw = _read(f"{base}/cmdline")
    return _join(raw.split("\0")) if raw else None


def _join(args: list[str]) -> str | None:
    text = " ".join(a for a in args if a)
    return text[:CMDLINE_MAX_CHARS] or None


def _proc_started_at(base: str) -> float | None:
    stat = _read(f"{base}/stat")
    boot = _boot_time()
    if stat is None or boot is None:
        return None
    # comm (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        ticks = int(fields[19])
    except (IndexError, ValueError):
        return None
    return round(boot + ticks / os.sysconf("SC_CLK_TCK"), 3)


@functools.cache
def _boot_time() -> float | None:
    stat = _read("/proc/stat") or ""
    for line in stat.splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return None
