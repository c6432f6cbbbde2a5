"""The optimizer a workload's flags name, and its per-step learning-rate schedule."""

from __future__ import annotations

import argparse
import math
from functools import partial

import torch

LR_SCHEDULES = ("cosine", "constant")


def build_optimizer(params, args: argparse.Namespace) -> torch.optim.Optimizer:
    if args.optimizer == "adam":
        return torch.optim.Adam(params, lr=args.lr)
    return torch.optim.SGD(params, lr=args.lr, momentum=0.9)


def build_schedule(
    optimizer: torch.optim.Optimizer, args: argparse.Namespace, steps_per_epoch: int
) -> torch.optim.lr_scheduler.LRScheduler:
    """Per-step learning-rate schedule. Cosine decay ends the run at a small step size, so the
    final weights depend less on the noise of the last steps (Hogwild's interleaving on a loaded
    node); over a few seeds on a loaded node it held accuracy as well as a constant rate or a little better."""
    total = max(1, args.epochs * steps_per_epoch)
    if args.lr_schedule == "cosine":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, partial(_cosine, total=total))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, _constant)


def _cosine(step: int, total: int) -> float:
    return 0.5 * (1.0 + math.cos(math.pi * min(step, total) / total))


def _constant(step: int) -> float:
    return 1.0
