"""A training loop's checkpoints: when to save, saving as the strategy does, and where a resumed run starts.

Under torchrun the ranks agree every ``AGREE_STEPS`` steps (one small all-reduce) on whether to save and
stop, since each receives the signal on its own and a time rule reads each rank's clock. What a
checkpoint holds is the strategy's (training/workloads/strategies/); when and where is
training/workloads/checkpoints.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from training.workloads import checkpoints
from training.workloads.distributed import DistEnv
from training.workloads.stops import exit_now, leave_stopped, stop_signal
from training.workloads.strategies import Strategy
from training.workloads.trainer import Trainer


class Saver:
    """Saves every N steps or M seconds, and once more when told to stop."""

    AGREE_STEPS = 10

    def __init__(
        self,
        checkpointer: checkpoints.Checkpointer,
        trainer: Trainer,
        model: nn.Module,
        strategy: Strategy,
        env: DistEnv,
    ) -> None:
        self.checkpointer = checkpointer
        self.trainer = trainer
        self.model = model
        self.strategy = strategy
        self.env = env

    def resume(self) -> tuple[int, int]:
        """Load FLEET_RESUME_DIR's checkpoint when given; returns (first epoch, batches of it to skip)."""
        resumed = resume_state(self.env.world_size, self.strategy)
        if resumed is None:
            return 1, 0
        path, state = resumed
        trainer = self.trainer
        step = self.strategy.restore(state, self.model, trainer.optimizer, trainer.schedule)
        trainer.step = self.checkpointer.last_step = step
        if self.env.is_main:
            print(f"resumed from {path} at step {step}", flush=True)
        return step // trainer.steps_per_epoch + 1, step % trainer.steps_per_epoch

    def after_step(self) -> None:
        if not self.checkpointer.enabled:
            return
        step = self.trainer.step
        if self.env.distributed:
            if step % self.AGREE_STEPS:
                return
            stop, due = self.agree(stop_signal() is not None, self.checkpointer.due(step))
        else:
            stop, due = stop_signal() is not None, self.checkpointer.due(step)
        if stop or due:
            self.save("stop" if stop else "periodic")
        if stop:
            self.leave()

    def agree(self, stop: bool, due: bool) -> tuple[bool, bool]:
        flags = torch.tensor([int(stop), int(due and self.env.is_main)], dtype=torch.int32)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        return bool(flags[0]), bool(flags[1])

    def save(self, reason: str) -> None:
        if not (self.env.is_main or self.strategy.collective_forward):
            return
        trainer = self.trainer
        state = self.strategy.training_state(self.model, trainer.optimizer, trainer.schedule, trainer.step)
        if self.env.is_main:
            state["world_size"] = self.env.world_size
            self.checkpointer.save(state, trainer.step, reason)

    def stop_if_asked(self) -> None:
        """A signal that came after the last step (during the last evaluation): the run is complete, so no save."""
        if stop_signal() is not None and self.checkpointer.enabled:
            self.leave()

    def leave(self) -> None:
        leave_stopped(self.trainer.step)


def resume_state(world_size: int, strategy: Strategy) -> tuple[Path, dict[str, Any]] | None:
    """FLEET_RESUME_DIR's checkpoint with its path, or None for a fresh start; one saved by another number
    of processes (or by Hogwild for another strategy, and the reverse) is refused here (exit 2)."""
    path = checkpoints.resume_path()
    if path is None:
        return None
    state = checkpoints.load(path)
    try:
        checkpoints.check_fits(state, world_size, strategy)
    except checkpoints.DoesNotFit as refused:
        exit_now(2, f"cannot resume: {refused}")
    return path, state
