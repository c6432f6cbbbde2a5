"""The fleet's runs on this machine, as a simulated node's GPUs would see them.

A node worker starts every process of a run with FLEET_RUN_ID, FLEET_NODE (the node's hostname in the
fleet) and CUDA_VISIBLE_DEVICES (the GPU indexes it was given). On a machine without GPUs the simulated
agent of node H finds the processes that carry FLEET_NODE=H and reports each one on the GPUs it was
given, as NVML would report a CUDA process: memory is its resident set, utilization its CPU share.

Only the processes that start no other process of the run are reported (torchrun's and the Hogwild
supervisor's workers, not the launchers), each on the device it would use: ``LOCAL_RANK`` picks one of
its visible GPUs when set, otherwise it uses them all. Reading another account's environment needs root, the
same account, or CAP_SYS_PTRACE with CAP_DAC_READ_SEARCH (the agent's systemd unit grants these); a process
we may not read is not seen. Stdlib only, like the rest of the agent.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from . import procinfo

MIB = 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Tagged:
    """A process of a run, with what its environment says about where it runs."""

    run: int
    gpus: tuple[int, ...]
    info: dict


class LocalRuns:
    """Finds the runs a node worker started for ``hostname`` and measures their processes each tick."""

    def __init__(self, hostname: str, proc: str = "/proc"):
        self.hostname = hostname
        self.proc = proc
        # (pid, start ticks) → Tagged, or None for a process that is not one of this node's runs.
        self._tags: dict[tuple[int, str], Tagged | None] = {}
        self._cpu: dict[int, tuple[float, float]] = {}  # pid → (CPU seconds, monotonic time) at the last tick

    def processes_by_gpu(self, gpu_count: int) -> dict[int, list[dict]]:
        """GPU index → the run processes on it, in the agent protocol's process shape."""
        found = self._scan()
        parents = {stat[1] for stat in found.values()}
        now = time.monotonic()
        by_gpu: dict[int, list[dict]] = {}
        cpu = {}
        for pid, (tagged, _ppid, cpu_s, rss_pages) in found.items():
            cpu[pid] = (cpu_s, now)
            if pid in parents:
                continue  # a launcher: its workers are the GPU processes
            share = self._share(pid, cpu_s, now)
            process = {
                **tagged.info,
                "pid": pid,
                "mem_used_mib": rss_pages * PAGE // MIB,
                "sm_util": share,
                "run": tagged.run,
            }
            for index in tagged.gpus:
                if 0 <= index < gpu_count:
                    by_gpu.setdefault(index, []).append(process)
        self._cpu = cpu
        return by_gpu

    def _share(self, pid: int, cpu_s: float, now: float) -> int:
        before = self._cpu.get(pid)
        if before is None or now <= before[1]:
            return 0
        return max(0, min(100, round(100 * (cpu_s - before[0]) / (now - before[1]))))

    def _scan(self) -> dict[int, tuple[Tagged, int, float, int]]:
        """pid → (its tag, parent pid, CPU seconds, resident pages) for this node's run processes."""
        found = {}
        seen = set()
        for entry in os.listdir(self.proc):
            if not entry.isdigit():
                continue
            pid = int(entry)
            stat = self._stat(pid)
            if stat is None:
                continue
            ppid, start, cpu_s, rss_pages = stat
            key = (pid, start)
            seen.add(key)
            if key not in self._tags:
                self._tags[key] = self._tag(pid)
            tagged = self._tags[key]
            if tagged is not None:
                found[pid] = (tagged, ppid, cpu_s, rss_pages)
        self._tags = {key: tag for key, tag in self._tags.items() if key in seen}
        return found

    def _stat(self, pid: int) -> tuple[int, str, float, int] | None:
        try:
            with open(f"{self.proc}/{pid}/stat", "rb") as f:
                raw = f.read().decode("ascii", "replace")
        except OSError:
            return None
        fields = raw.rsplit(")", 1)[-1].split()
        try:
            # After the command: state ppid ... utime(14) stime(15) ... starttime(22) vsize rss(24), 1-based.
            return int(fields[1]), fields[19], (int(fields[11]) + int(fields[12])) / TICKS, int(fields[21])
        except (IndexError, ValueError):
            return None

    def _tag(self, pid: int) -> Tagged | None:
        environ = read_environ(f"{self.proc}/{pid}/environ")
        if environ.get("FLEET_NODE") != self.hostname:
            return None
        run = procinfo.parse_run(b"FLEET_RUN_ID=" + environ.get("FLEET_RUN_ID", "").encode())
        if run is None:
            return None
        gpus = devices(environ.get("CUDA_VISIBLE_DEVICES", ""), environ.get("LOCAL_RANK"))
        if not gpus:
            return None
        info = procinfo.process_info(pid)
        return Tagged(run, gpus, {key: info[key] for key in ("user", "name", "cmdline", "started_at")})


def read_environ(path: str) -> dict[str, str]:
    try:
        with open(path, "rb") as f:
            raw = f.read(procinfo.ENVIRON_MAX_BYTES)
    except OSError:
        return {}
    pairs = (entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)
    return {key.decode("utf-8", "replace"): value.decode("utf-8", "replace") for key, value in pairs}


def devices(visible: str, local_rank: str | None) -> tuple[int, ...]:
    """The GPU indexes a process uses: its LOCAL_RANK's visible device, else every visible one."""
    indexes = tuple(int(part) for part in visible.split(",") if part.strip().isdigit())
    if local_rank is not None and local_rank.isdigit() and int(local_rank) < len(indexes):
        return (indexes[int(local_rank)],)
    return indexes
