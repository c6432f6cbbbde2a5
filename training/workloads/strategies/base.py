"""What every strategy does inside a training process: wrap the model, and save and load a checkpoint.

A checkpoint here is one whole state (weights, optimizer, schedule, step, RNG) that fits any strategy
saving the same; a strategy whose state is its own says so (``own_checkpoints``) and names itself in
it. Pure torch: no Django.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class Strategy:
    """One way to train a model over a run's processes; subclasses set the facts and override what differs."""

    name: str  # the server's name for it (training/strategies/)
    label: str  # in messages: "a DDP run"
    torchrun = False  # its processes are torchrun's ranks: a choice of the workloads' --strategy flag
    collective_forward = False  # every rank takes part in each forward pass (evaluation, saving), not rank 0 alone
    own_checkpoints = False  # its checkpoints name it and fit only it

    def wrap(self, model: nn.Module, device: torch.device) -> nn.Module:
        """The module the training loop steps (the model itself unless the strategy wraps it)."""
        return model

    def model_state(self, model: nn.Module) -> dict:
        """The whole model's parameters on the CPU, for the saved model file (rank 0 gets them)."""
        return model.state_dict()

    def training_state(self, model: nn.Module, optimizer, schedule, step: int) -> dict[str, Any]:
        """Everything a run needs to continue: weights, optimizer and schedule, step, and the RNG."""
        model_state, optimizer_state = self.state_dicts(model, optimizer)
        return {
            "step": step,
            "model": model_state,
            "optimizer": optimizer_state,
            "schedule": schedule.state_dict() if schedule is not None else None,
            "rng": torch.get_rng_state(),
        }

    def restore(self, state: dict[str, Any], model: nn.Module, optimizer, schedule) -> int:
        """Load a training_state() into a model this strategy wrapped; returns the step it was saved at."""
        self.load_state_dicts(state, model, optimizer)
        if schedule is not None and state.get("schedule") is not None:
            schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        return int(state["step"])

    def state_dicts(self, model: nn.Module, optimizer) -> tuple[dict, dict]:
        return model.state_dict(), optimizer.state_dict()

    def load_state_dicts(self, state: dict[str, Any], model: nn.Module, optimizer) -> None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
