"""Checkpoints of a built-in workload: when to save, saving atomically, and loading one to continue from.

The node worker tells a run where to save and what to continue from through the environment
(docs/workloads.md): FLEET_CHECKPOINT_DIR, FLEET_RESUME_DIR, FLEET_CHECKPOINT_EVERY_STEPS and
FLEET_CHECKPOINT_EVERY_S. Without FLEET_CHECKPOINT_DIR nothing is saved. Pure torch: no Django.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch

from training.workloads import event_lines

FILE = "checkpoint.pt"


def _env_number(name: str, kind=float) -> float:
    try:
        return max(0, kind(os.environ.get(name, "0") or 0))
    except ValueError:
        return 0


class Checkpointer:
    """Decides when a checkpoint is due and writes it (a temporary file, then a rename: never half a file)."""

    def __init__(self, directory: str | None, every_steps: int = 0, every_s: float = 0.0, clock=time.monotonic):
        self.directory = Path(directory) if directory else None
        self.every_steps = every_steps
        self.every_s = every_s
        self.clock = clock
        self.last_saved = clock()
        self.last_step = 0

    @classmethod
    def from_environ(cls) -> Checkpointer:
        return cls(
            os.environ.get("FLEET_CHECKPOINT_DIR") or None,
            int(_env_number("FLEET_CHECKPOINT_EVERY_STEPS", int)),
            _env_number("FLEET_CHECKPOINT_EVERY_S"),
        )

    @property
    def enabled(self) -> bool:
        return self.directory is not None

    def due(self, step: int) -> bool:
        """Whether the periodic rule asks for a checkpoint after ``step`` (steps or seconds, whichever first)."""
        if not self.enabled:
            return False
        by_steps = self.every_steps > 0 and step - self.last_step >= self.every_steps
        by_time = self.every_s > 0 and self.clock() - self.last_saved >= self.every_s
        return by_steps or by_time

    def save(self, state: dict[str, Any], step: int, reason: str) -> Path:
        """Write ``state`` as the directory's checkpoint and report it (event ``checkpoint``)."""
        started = time.perf_counter()
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / FILE
        partial = self.directory / f".{FILE}.partial"
        torch.save(state, partial)
        os.replace(partial, path)
        self.last_saved, self.last_step = self.clock(), step
        seconds = time.perf_counter() - started
        event_lines.emit(
            "checkpoint", step=step, bytes=path.stat().st_size, seconds=seconds, reason=reason, ts=time.time()
        )
        return path


def resume_path() -> Path | None:
    """The checkpoint file to continue from (FLEET_RESUME_DIR), or None for a fresh start."""
    directory = os.environ.get("FLEET_RESUME_DIR")
    if not directory:
        return None
    path = Path(directory) / FILE
    if not path.is_file():
        raise FileNotFoundError(f"FLEET_RESUME_DIR={directory} holds no {FILE}")
    return path


class DoesNotFit(ValueError):
    """A checkpoint this run cannot continue from: refused before the first step."""


def check_fits(state: dict[str, Any], world_size: int, hogwild: bool = False) -> None:
    """A checkpoint continues only with as many processes as saved it: the step counter is counted in
    batches per process (an epoch has world-size-many fewer of them), and the interrupted epoch's
    batches are skipped by their place in each process's share of the data. Single, DDP and FSDP save
    the same whole state; a Hogwild one (each worker's optimizer) fits only Hogwild."""
    if (state.get("strategy") == "hogwild") != hogwild:
        saved_by = "a Hogwild run" if not hogwild else "a run of another strategy"
        raise DoesNotFit(f"the checkpoint was saved by {saved_by}: resume it with the strategy that saved it")
    saved = state.get("world_size", world_size)  # saved before the field existed: single or DDP, not checked
    if saved != world_size:
        raise DoesNotFit(
            f"the checkpoint was saved by {saved} process(es) and this run has {world_size}: "
            f"resume it with {saved} process(es) (a checkpoint continues only on the world size that saved it)"
        )


def load(path: Path) -> dict[str, Any]:
    # Our own files, written by save(): optimizer and RNG states need more than plain tensors.
    return torch.load(path, map_location="cpu", weights_only=False)


def training_state(model, optimizer, schedule, step: int, mode: str) -> dict[str, Any]:
    """Everything a run needs to continue: weights, optimizer and schedule, step, and the RNG.

    Under FSDP every rank must call this (the full state is gathered from the shards); rank 0 gets it.
    """
    if mode == "fsdp":
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        model_state, optimizer_state = get_state_dict(model, optimizer, options=options)
    else:
        model_state, optimizer_state = model.state_dict(), optimizer.state_dict()
    return {
        "step": step,
        "model": model_state,
        "optimizer": optimizer_state,
        "schedule": schedule.state_dict() if schedule is not None else None,
        "rng": torch.get_rng_state(),
    }


def restore(state: dict[str, Any], model, optimizer, schedule, mode: str) -> int:
    """Load a training_state() into a model already wrapped for ``mode``; returns the step it was saved at."""
    if mode == "fsdp":
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

        options = StateDictOptions(full_state_dict=True)
        set_state_dict(
            model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"], options=options
        )
    else:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    if schedule is not None and state.get("schedule") is not None:
        schedule.load_state_dict(state["schedule"])
    torch.set_rng_state(state["rng"])
    return int(state["step"])
