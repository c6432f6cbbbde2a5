"""Hogwild: worker processes train one model in shared memory, without locks.

The supervisor that starts the workers is its own program (training/workloads/hogwild_supervisor.py); this module
owns what is Hogwild's in torch: the shared model, and a checkpoint that is the supervisor's model with
every worker's optimizer, schedule, RNG and place in its epoch. Such a checkpoint names the strategy and
fits only a Hogwild run with as many workers.
"""

from typing import Any

import torch
from torch import nn

from training.workloads.strategies.base import Strategy


class Hogwild(Strategy):
    name = "hogwild"
    label = "Hogwild"
    own_checkpoints = True

    def wrap(self, model: nn.Module, device: torch.device) -> nn.Module:
        """The model in shared memory, where every worker steps it."""
        model.share_memory()
        return model

    def supervisor_state(self, model: nn.Module, workers: list[dict], step: int) -> dict[str, Any]:
        """The run's checkpoint: the shared model and each worker's own state (``worker_state``), by rank."""
        return {
            "strategy": self.name,
            "world_size": len(workers),
            "step": step,
            "model": model.state_dict(),
            "workers": workers,
            "rng": torch.get_rng_state(),
        }

    def restore_supervisor(self, state: dict[str, Any], model: nn.Module) -> int:
        """Load the shared model and the supervisor's RNG; returns the step it was saved at."""
        model.load_state_dict(state["model"])
        torch.set_rng_state(state["rng"])
        return state["step"]

    def worker_state(self, trainer, epoch: int, done: int) -> dict[str, Any]:
        """One worker's part: its optimizer, schedule and RNG, and ``done`` batches into ``epoch``."""
        return {
            "epoch": epoch,
            "done": done,
            "step": trainer.step,
            "optimizer": trainer.optimizer.state_dict(),
            "schedule": trainer.schedule.state_dict(),
            "rng": torch.get_rng_state(),
        }

    def restore_worker(self, state: dict[str, Any], trainer) -> tuple[int, int]:
        """Put a worker back where ``worker_state`` left it; returns (its epoch, batches of it done)."""
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        trainer.step = state["step"]
        return state["epoch"], state["done"]
