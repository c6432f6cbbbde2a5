"""How a torchrun rank wraps its model: DDP (a full replica, gradients all-reduced) or FSDP (a shard).

The built-in workloads take ``--parallel ddp|fsdp``; the node worker passes ``fsdp`` for an FSDP
run (training.strategies.fsdp), and ``FLEET_STRATEGY`` gives the default when the flag is absent.
"""

from __future__ import annotations

import os

import torch
from torch import nn

from training.workloads import cpu_ddp

MODES = ("ddp", "fsdp")


def default_mode() -> str:
    mode = os.environ.get("FLEET_STRATEGY", "")
    return mode if mode in MODES else "ddp"


def wrap(model: nn.Module, mode: str, device: torch.device) -> nn.Module:
    """The module the training loop steps: DDP around ``model``, or ``model`` itself sharded in place."""
    if mode == "fsdp":
        return shard(model)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    if device.type == "cpu":
        ddp.register_comm_hook(None, cpu_ddp.polled_allreduce_hook)
    return ddp


def shard(model: nn.Module) -> nn.Module:
    """FSDP2: each module that owns parameters becomes a unit of its own (gathered only while it runs),
    then the root takes whatever is left. Every rank must then run every forward, evaluation included."""
    from torch.distributed.fsdp import fully_shard

    for module in list(model.modules())[1:]:
        if any(True for _ in module.parameters(recurse=False)):
            fully_shard(module)
    fully_shard(model)
    return model


def collective_forward(mode: str) -> bool:
    """Whether every rank must take part in a forward pass (evaluation, saving) rather than rank 0 alone."""
    return mode == "fsdp"


def full_state_dict(model: nn.Module, mode: str) -> dict:
    """The whole model's parameters on the CPU (gathered from every rank under FSDP; rank 0 gets them)."""
    if mode != "fsdp":
        return model.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
