"""The ranges of a run's hyperparameters, stated once, with the words that refuse a value outside them.

The run form and the API check a launch with these (training/launching/params.py), and the built-in
workloads their own flags (training/workloads/arguments.py), so both refuse the same values the same
way. Each check returns the clean value or raises ValueError with a sentence for the researcher.
Pure Python: no torch, no Django.
"""

from __future__ import annotations

import math
from typing import Any

MAX_LR = 10.0
MAX_EPOCHS = 1000
MAX_MATRIX_SIZE = 32768
MAX_ITERATIONS = 1_000_000
SEED_LIMIT = 2**32
OPTIMIZERS = ("sgd", "adam")


def whole(value: Any, label: str) -> int:
    """A whole number from a form's text, the API's JSON or a flag; 2.0 counts, 2.5 and True do not."""
    if isinstance(value, bool):
        raise ValueError(f"{label} must be a whole number.")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValueError(f"{label} must be a whole number, not {value!r}.")


def number(value: Any, label: str) -> float:
    """A finite number."""
    if isinstance(value, bool):
        raise ValueError(f"{label} must be a number.")
    try:
        found = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{label} must be a number, not {value!r}.") from None
    if not math.isfinite(found):
        raise ValueError(f"{label} must be a finite number.")
    return found


def lr(value: Any, **_: Any) -> float:
    rate = number(value, "Learning rate")
    if rate <= 0:
        raise ValueError("Learning rate must be greater than 0.")
    if rate > MAX_LR:
        raise ValueError(f"Learning rate {rate:g} is absurd; use at most {MAX_LR:g}.")
    return rate


def batch_size(value: Any, *, train_size: int | None = None, **_: Any) -> int:
    """At least 1, and at most the training set when its size is known."""
    size = whole(value, "Batch size")
    if size < 1:
        raise ValueError("Batch size must be at least 1.")
    if train_size is not None and size > train_size:
        raise ValueError(f"Batch size {size} is larger than the training set ({train_size} samples).")
    return size


def epochs(value: Any, **_: Any) -> int:
    count = whole(value, "Epochs")
    if not 1 <= count <= MAX_EPOCHS:
        raise ValueError(f"Epochs must be between 1 and {MAX_EPOCHS}.")
    return count


def optimizer(value: Any, **_: Any) -> str:
    name = str(value).strip().lower()
    if name not in OPTIMIZERS:
        raise ValueError(f"Unknown optimizer {value!r}; choose {' or '.join(OPTIMIZERS)}.")
    return name


def seed(value: Any, **_: Any) -> int:
    found = whole(value, "Seed")
    if found < 0:
        raise ValueError("Seed must not be negative.")
    if found >= SEED_LIMIT:
        raise ValueError("Seed must be below 2**32.")
    return found


def size(value: Any, **_: Any) -> int:
    """A burn-in's matrix size; 0 lets the workload pick one for the device."""
    found = whole(value, "Matrix size")
    if not 0 <= found <= MAX_MATRIX_SIZE:
        raise ValueError(f"Matrix size must be between 0 (automatic) and {MAX_MATRIX_SIZE}.")
    return found


def iterations(value: Any, **_: Any) -> int:
    count = whole(value, "Iterations")
    if not 1 <= count <= MAX_ITERATIONS:
        raise ValueError(f"Iterations must be between 1 and {MAX_ITERATIONS}.")
    return count


CHECKS = {
    "lr": lr,
    "batch_size": batch_size,
    "epochs": epochs,
    "optimizer": optimizer,
    "seed": seed,
    "size": size,
    "iterations": iterations,
}
