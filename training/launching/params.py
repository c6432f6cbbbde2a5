"""Validation of run parameters, shared by the run form, the API and the strategies.

Pure Python: no torch, no Django. ``validate_hyperparameters`` returns the
cleaned values and a dict of messages keyed by field; a field with an error is
left out of the cleaned values.
"""

from __future__ import annotations

import os
from typing import Any

from training import strategies
from training.workloads import SCRIPT_SPEC, WORKLOADS, Workload

MAX_LR = 10.0
MAX_EPOCHS = 1000
MAX_MATRIX_SIZE = 32768
MAX_ITERATIONS = 1_000_000
OPTIMIZERS = ("sgd", "adam")
# Used when the form leaves a launch field out; hyperparameters default per workload.
LAUNCH_DEFAULTS: dict[str, Any] = {"strategy": "single", "processes": 1, "nodes": 1}
LAUNCH_FIELDS = ("strategy", "processes", "nodes")


def validate_hyperparameters(
    params: dict[str, Any], workload: str, *, gpus: int = 0, cpus: int | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Clean ``params`` for the built-in ``workload``; returns ``(clean, errors)``.

    ``processes`` is per node and is bounded by the devices of one node: its
    ``gpus`` when it has any, else its ``cpus`` (this machine's cores when not
    given). Fields the workload does not take are refused by name.
    """
    spec = WORKLOADS.get(workload)
    if spec is None:
        return {}, {"workload": f"Unknown workload {workload!r}; choose one of {', '.join(WORKLOADS)}."}
    return validate_params(params, spec, workload, gpus=gpus, cpus=cpus)


def validate_script_params(params: dict[str, Any], *, gpus: int = 0, cpus: int | None = None) -> tuple[dict, dict]:
    """The built-in workloads' checks for a user script, which takes the same flags."""
    return validate_params(params, SCRIPT_SPEC, "A script", gpus=gpus, cpus=cpus)


def validate_params(
    params: dict[str, Any], spec: Workload, who: str, *, gpus: int, cpus: int | None
) -> tuple[dict[str, Any], dict[str, str]]:
    allowed = (*spec.params, *LAUNCH_FIELDS)
    defaults = {**spec.defaults, **LAUNCH_DEFAULTS}
    clean: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in params:
        if field not in allowed:
            errors[field] = f"{who} takes no parameter {field!r}."
    for field in allowed:
        value = params.get(field)
        if value is None or value == "":
            value = defaults[field]
        try:
            clean[field] = CHECKS[field](value, spec=spec, gpus=gpus, cpus=cpus or os.cpu_count() or 1)
        except ValueError as error:
            errors[field] = str(error)
    _check_combination(clean, errors, spec, who)
    return {k: v for k, v in clean.items() if k not in errors}, errors


def _check_combination(clean: dict[str, Any], errors: dict[str, str], spec: Workload, who: str) -> None:
    name = clean.get("strategy")
    if not name:
        return
    if name not in spec.strategies:
        errors["strategy"] = f"{who} runs as {' or '.join(spec.strategies)}, not {name}."
    strategies.get(name).check(clean, errors, [strategies.get(n) for n in spec.strategies])


def _integer(value: Any, label: str) -> int:
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


def _number(value: Any, label: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{label} must be a number.")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{label} must be a number, not {value!r}.") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{label} must be a finite number.")
    return number


def _lr(value: Any, **_: Any) -> float:
    lr = _number(value, "Learning rate")
    if lr <= 0:
        raise ValueError("Learning rate must be greater than 0.")
    if lr > MAX_LR:
        raise ValueError(f"Learning rate {lr:g} is absurd; use at most {MAX_LR:g}.")
    return lr


def _batch_size(value: Any, *, spec, **_: Any) -> int:
    size = _integer(value, "Batch size")
    if size < 1:
        raise ValueError("Batch size must be at least 1.")
    if spec.train_size is not None and size > spec.train_size:
        raise ValueError(f"Batch size {size} is larger than the training set ({spec.train_size} samples).")
    return size


def _epochs(value: Any, **_: Any) -> int:
    epochs = _integer(value, "Epochs")
    if not 1 <= epochs <= MAX_EPOCHS:
        raise ValueError(f"Epochs must be between 1 and {MAX_EPOCHS}.")
    return epochs


def _optimizer(value: Any, **_: Any) -> str:
    name = str(value).strip().lower()
    if name not in OPTIMIZERS:
        raise ValueError(f"Unknown optimizer {value!r}; choose {' or '.join(OPTIMIZERS)}.")
    return name


def _seed(value: Any, **_: Any) -> int:
    seed = _integer(value, "Seed")
    if seed < 0:
        raise ValueError("Seed must not be negative.")
    if seed >= 2**32:
        raise ValueError("Seed must be below 2**32.")
    return seed


def _processes(value: Any, *, gpus: int, cpus: int, **_: Any) -> int:
    processes = _integer(value, "Processes")
    if processes < 1:
        raise ValueError("Processes must be at least 1.")
    devices, kind = (gpus, "GPUs") if gpus > 0 else (cpus, "CPU cores")
    if processes > devices:
        raise ValueError(f"{processes} processes is more than the {devices} {kind} available per node.")
    return processes


def _nodes(value: Any, **_: Any) -> int:
    nodes = _integer(value, "Nodes")
    if nodes < 1:
        raise ValueError("Nodes must be at least 1.")
    return nodes


def _strategy(value: Any, **_: Any) -> str:
    name = str(value).strip().lower()
    if name not in strategies.STRATEGIES:
        raise ValueError(f"Unknown strategy {value!r}; choose one of {', '.join(strategies.STRATEGIES)}.")
    return name


def _size(value: Any, **_: Any) -> int:
    size = _integer(value, "Matrix size")
    if not 0 <= size <= MAX_MATRIX_SIZE:
        raise ValueError(f"Matrix size must be between 0 (automatic) and {MAX_MATRIX_SIZE}.")
    return size


def _iterations(value: Any, **_: Any) -> int:
    iterations = _integer(value, "Iterations")
    if not 1 <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"Iterations must be between 1 and {MAX_ITERATIONS}.")
    return iterations


CHECKS = {
    "lr": _lr,
    "batch_size": _batch_size,
    "epochs": _epochs,
    "optimizer": _optimizer,
    "seed": _seed,
    "processes": _processes,
    "nodes": _nodes,
    "strategy": _strategy,
    "size": _size,
    "iterations": _iterations,
}
