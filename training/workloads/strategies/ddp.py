"""DDP: each torchrun rank holds a full replica, and DistributedDataParallel all-reduces the gradients.

Rank 0 saves the whole state alone; the replicas are the same. On CPU ranks (gloo) the all-reduce is
waited for by polling (training/workloads/cpu_ddp.py).
"""

import torch
from torch import nn

from training.workloads import cpu_ddp
from training.workloads.strategies.base import Strategy


class DDP(Strategy):
    name = "ddp"
    label = "DDP"
    torchrun = True

    def wrap(self, model: nn.Module, device: torch.device) -> nn.Module:
        ddp = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
        if device.type == "cpu":
            ddp.register_comm_hook(None, cpu_ddp.polled_allreduce_hook)
        return ddp
