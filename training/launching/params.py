"""Validation of run parameters, shared by the run form, the API and the strategies.

Pure Python: no torch, no Django. ``validate_hyperparameters`` returns the
cleaned values and a dict of messages keyed by field; a field with an error is
left out of the cleaned values. The hyperparameters' ranges and words are
training/workloads/hyperparams.py's, which the workloads' own flags share; the
launch's fields (strategy, processes, nodes) are checked here.
"""

from __future__ import annotations

import os
from typing import Any

from training import strategies
from training.workloads import SCRIPT_SPEC, WORKLOADS, Workload, hyperparams

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
            clean[field] = check_field(field, value, spec, gpus=gpus, cpus=cpus or os.cpu_count() or 1)
        except ValueError as error:
            errors[field] = str(error)
    _check_combination(clean, errors, spec, who)
    return {k: v for k, v in clean.items() if k not in errors}, errors


def check_field(field: str, value: Any, spec: Workload, *, gpus: int, cpus: int) -> Any:
    """One field's clean value, or ValueError with the sentence that refuses it."""
    if field in LAUNCH_CHECKS:
        return LAUNCH_CHECKS[field](value, gpus=gpus, cpus=cpus)
    return hyperparams.CHECKS[field](value, train_size=spec.train_size)


def _check_combination(clean: dict[str, Any], errors: dict[str, str], spec: Workload, who: str) -> None:
    name = clean.get("strategy")
    if not name:
        return
    if name not in spec.strategies:
        errors["strategy"] = f"{who} runs as {' or '.join(spec.strategies)}, not {name}."
    strategies.get(name).check(clean, errors, [strategies.get(n) for n in spec.strategies])


def _processes(value: Any, *, gpus: int, cpus: int, **_: Any) -> int:
    processes = hyperparams.whole(value, "Processes")
    if processes < 1:
        raise ValueError("Processes must be at least 1.")
    devices, kind = (gpus, "GPUs") if gpus > 0 else (cpus, "CPU cores")
    if processes > devices:
        raise ValueError(f"{processes} processes is more than the {devices} {kind} available per node.")
    return processes


def _nodes(value: Any, **_: Any) -> int:
    nodes = hyperparams.whole(value, "Nodes")
    if nodes < 1:
        raise ValueError("Nodes must be at least 1.")
    return nodes


def _strategy(value: Any, **_: Any) -> str:
    name = str(value).strip().lower()
    if name not in strategies.STRATEGIES:
        raise ValueError(f"Unknown strategy {value!r}; choose one of {', '.join(strategies.STRATEGIES)}.")
    return name


# The launch's own fields; a hyperparameter's check is training/workloads/hyperparams.py's.
LAUNCH_CHECKS = {"processes": _processes, "nodes": _nodes, "strategy": _strategy}
