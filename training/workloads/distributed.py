"""Where a training process sits and what it runs on: torchrun's environment, its device, threads and seed.

One process without torchrun's variables; under torchrun one rank of a process group (nccl on GPUs,
gloo on CPUs, whose ranks keep to their own cores: training/workloads/cpu_ddp.py).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from training.workloads import cpu_ddp


@dataclass(frozen=True)
class DistEnv:
    """Where this process sits in a torchrun launch (one process when absent)."""

    world_size: int = 1
    rank: int = 0
    local_rank: int = 0
    local_world_size: int = 1
    launched: bool = False

    @classmethod
    def from_environ(cls, environ: dict[str, str] | None = None) -> DistEnv:
        environ = os.environ if environ is None else environ
        if "WORLD_SIZE" not in environ:
            return cls()
        return cls(
            world_size=int(environ["WORLD_SIZE"]),
            rank=int(environ["RANK"]),
            local_rank=int(environ.get("LOCAL_RANK", "0")),
            local_world_size=int(environ.get("LOCAL_WORLD_SIZE", "1")),
            launched=True,
        )

    @property
    def distributed(self) -> bool:
        """Started by torchrun: a process group and the run's strategy, even with one process."""
        return self.launched

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def pick_device(local_rank: int = 0) -> torch.device:
    """The GPU of this local rank when CUDA is usable, else the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device("cpu")


def backend_for(device: torch.device) -> str:
    return "nccl" if device.type == "cuda" else "gloo"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def threads_per_process(processes: int) -> int:
    """Intra-op threads so that ``processes`` workers share the cores without oversubscribing."""
    return max(1, usable_cores() // max(1, processes))


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)  # seeds CUDA too


def start_process(env: DistEnv, threads: int) -> torch.device:
    """Threads, device and (under torchrun) the process group of this process."""
    device = pick_device(env.local_rank)
    threads = threads or threads_per_process(env.local_world_size)  # counted before pinning narrows it
    if env.distributed and device.type == "cpu":
        # Before the process group starts gloo's threads, so that they inherit it.
        cores = cpu_ddp.rank_cores(env.local_rank, env.local_world_size, sorted(os.sched_getaffinity(0)))
        if cores:
            cpu_ddp.pin_process(cores)
    torch.set_num_threads(threads)
    if env.distributed:
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group(backend_for(device), timeout=timedelta(minutes=10))
    return device
