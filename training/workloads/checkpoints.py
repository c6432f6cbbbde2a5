"""Checkpoints of a built-in workload: when to save, saving atomically, and loading one to continue from.

The node worker tells a run where to save and what to continue from through the environment
(docs/workloads.md): FLEET_CHECKPOINT_DIR, FLEET_RESUME_DIR, FLEET_CHECKPOINT_EVERY_STEPS and
FLEET_CHECKPOINT_EVERY_S. Without FLEET_CHECKPOINT_DIR nothing is saved. What a checkpoint holds is
the strategy's (training/workloads/strategies/). Pure torch: no Django.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch

from training.workloads import event_lines, strategies
from training.workloads.strategies import Strategy

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


def check_fits(state: dict[str, Any], world_size: int, strategy: Strategy) -> None:
    """A checkpoint continues only with as many processes as saved it: the step counter is counted in
    batches per process (an epoch has world-size-many fewer of them), and the interrupted epoch's
    batches are skipped by their place in each process's share of the data. Single, DDP and FSDP save
    the same whole state; a strategy with checkpoints of its own (Hogwild: each worker's optimizer)
    names itself in them, and they fit only it."""
    saved_by = state.get("strategy")
    if saved_by != (strategy.name if strategy.own_checkpoints else None):
        who = f"a {strategies.label(saved_by)} run" if saved_by else "a run of another strategy"
        raise DoesNotFit(f"the checkpoint was saved by {who}: resume it with the strategy that saved it")
    saved = state.get("world_size", world_size)  # saved before the field existed: single or DDP, not checked
    if saved != world_size:
        raise DoesNotFit(
            f"the checkpoint was saved by {saved} process(es) and this run has {world_size}: "
            f"resume it with {saved} process(es) (a checkpoint continues only on the world size that saved it)"
        )


def load(path: Path) -> dict[str, Any]:
    # Our own files, written by save(): optimizer and RNG states need more than plain tensors.
    return torch.load(path, map_location="cpu", weights_only=False)
