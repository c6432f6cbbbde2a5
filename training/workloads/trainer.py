"""A small Trainer over in-memory tensors, and the held-out evaluation after each epoch."""

from __future__ import annotations

import argparse
import math
import time

import torch
from torch import nn
from torch.utils.data import BatchSampler, DistributedSampler, TensorDataset

from training.workloads import profiling
from training.workloads.optimizers import build_schedule


class Trainer:
    """Trains a model on in-memory tensors, one sampler-ordered pass per epoch."""

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        train: TensorDataset,
        batch_size: int,
        sampler: DistributedSampler,
        device: torch.device,
        args: argparse.Namespace | None = None,
        profiler: profiling.StepProfiler | None = None,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        steps_per_epoch = math.ceil(len(sampler) / batch_size)
        self.schedule = build_schedule(optimizer, args, steps_per_epoch) if args is not None else None
        self.train = train
        self.batch_size = batch_size
        self.sampler = sampler
        self.device = device
        self.loss_fn = nn.CrossEntropyLoss()
        self.steps_per_epoch = steps_per_epoch
        self.step = 0
        self.profiler = profiler

    def train_epoch(self, epoch: int, on_step, skip: int = 0) -> None:
        """One pass over this process's share of the data; ``on_step(loss, samples, seconds)`` after each step.

        ``skip`` leaves out the epoch's first batches (those a resumed run's checkpoint already trained on):
        the sampler's order depends only on the seed and the epoch, so they are the same batches.
        """
        self.sampler.set_epoch(epoch)
        self.model.train()
        inputs, targets = self.train.tensors
        last = time.perf_counter()
        profiler = self.profiler
        batches = BatchSampler(self.sampler, self.batch_size, drop_last=False)
        for number, indices in enumerate(batches):
            if number < skip:
                continue
            with profiler.data_span() if profiler else profiling.NO_SPAN:
                x = inputs[indices].to(self.device, non_blocking=True)
                y = targets[indices].to(self.device, non_blocking=True)
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            if self.schedule is not None:
                self.schedule.step()
            if profiler:
                profiler.step()
            self.step += 1
            now = time.perf_counter()
            on_step(loss.item(), len(indices), now - last)
            last = now


@torch.no_grad()
def evaluate(
    model: nn.Module, test: TensorDataset, device: torch.device, batch_size: int = 1024
) -> tuple[float, float]:
    """Held-out (accuracy, mean loss)."""
    model.eval()
    inputs, targets = test.tensors
    correct, loss_sum = 0, 0.0
    for start in range(0, len(targets), batch_size):
        x = inputs[start : start + batch_size].to(device)
        y = targets[start : start + batch_size].to(device)
        logits = model(x)
        loss_sum += nn.functional.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(dim=1) == y).sum().item()
    return correct / len(targets), loss_sum / len(targets)
