"""Keeping CPU DDP ranks (gloo) in step on a virtualised node.

Seen on a 2-core benchmark node (docs/benchmarks.md#training): with two
single-threaded ranks, half the steps took one kernel tick (HZ=250) longer than
the rest. A rank that finishes its backward first
blocks in the all-reduce, its vCPU halts, and waking it again costs a tick;
gloo's helper threads, free to run on either core, also wait for the other
rank's busy core. Two measures, which together raise DDP(2)'s scaling
efficiency at the default batch (docs/benchmarks.md#training):

- each rank's threads stay on its own share of the node's cores, so gloo's
  helpers run where their own rank is waiting, never behind the other rank;
- the gradient all-reduce is waited for by polling (yielding the core to
  gloo's threads) rather than sleeping, so the vCPU never halts mid-step.

Neither applies on a GPU (nccl) rank.
"""

# No `from __future__ import annotations`: DDP checks the hook's annotations
# against the real dist.GradBucket and torch.futures.Future types.

import os

import torch
import torch.distributed as dist


def rank_cores(local_rank: int, local_world_size: int, cores: list[int]) -> list[int] | None:
    """This rank's even share of ``cores``, or None when there are fewer cores than ranks."""
    share = len(cores) // max(1, local_world_size)
    if share < 1 or local_rank >= local_world_size:
        return None
    return cores[local_rank * share : (local_rank + 1) * share]


def pin_process(cores: list[int]) -> None:
    """Move every thread of this process (and so every thread it starts later) onto ``cores``."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except ProcessLookupError:  # a thread that ended meanwhile
            pass


def polled_allreduce_hook(
    group: dist.ProcessGroup | None, bucket: dist.GradBucket
) -> torch.futures.Future[torch.Tensor]:
    """DDP comm hook: average the bucket like DDP's default, waiting by polling instead of sleeping."""
    buffer = bucket.buffer()
    work = dist.all_reduce(buffer, group=group, async_op=True)
    while not work.is_completed():
        os.sched_yield()
    work.wait()  # raises if the collective failed
    buffer.div_(dist.get_world_size(group))
    done: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    done.set_result(buffer)
    return done
