"""Sweeps: a grid or random search over hyperparameters becomes N single-process runs over the fleet.

A sweep asks for k GPUs of a model (or names its GPUs): its runs wait, without GPUs, until
``training/sweeps/placing.py`` gives each a GPU that is free (reservations/availability.py), at most k at a
time, and start as GPUs become free. A sweep without GPUs runs each run on the CPUs of one node.
"""

import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from inventory.models import GPU, GPUModel, Node, Project
from reservations.gpu_picking import bookable_gpus
from training.choices import SweepMetric, SweepMode
from training.launching.launch import LaunchPlan, LaunchRequest, check_launch, launch
from training.models import SCRIPT, Sweep
from training.sweeps.placing import dispatch_soon
from training.workloads import WORKLOADS

INTEGER_PARAMS = {"epochs", "batch_size", "seed", "size", "iterations"}


@dataclass
class SweepRequest:
    """A search as the form or the API parsed it."""

    user: Any
    workload: str
    mode: str
    space: dict[str, Any]
    name: str = ""
    project: Project | None = None
    samples: int | None = None
    seed: int = 0
    metric: str = SweepMetric.ACCURACY
    base: dict[str, Any] = field(default_factory=dict)
    gpus: list[GPU] = field(default_factory=list)
    node: Node | None = None
    gpu_model: GPUModel | None = None
    gpu_count: int | None = None

    def pool(self) -> list[GPU]:
        """The GPUs its runs may use: the named ones, or every GPU of the model that is not draining."""
        if self.gpus:
            return sorted(self.gpus, key=lambda gpu: (gpu.node.hostname, gpu.index))
        if self.gpu_model is not None:
            return list(bookable_gpus(self.gpu_model))
        return []


def parse_values(text: str) -> list | dict:
    """Form text to a search dimension: ``0.001, 0.01`` is a list; ``1e-4..1e-2`` a range."""
    text = text.strip()
    if ".." in text:
        low, _, high = text.partition("..")
        return {"min": _scalar(low), "max": _scalar(high)}
    return [_scalar(item) for item in text.split(",") if item.strip()]


def _scalar(text: str) -> Any:
    text = text.strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def expand(mode: str, space: dict[str, Any], samples: int | None, seed: int) -> list[dict[str, Any]]:
    """Every combination (grid) or ``samples`` draws (random) of the space; raises ValueError on a bad space."""
    names = sorted(space)
    if mode == SweepMode.GRID:
        lists = [_grid_values(name, space[name]) for name in names]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*lists)]
    if mode == SweepMode.RANDOM:
        if not samples or samples < 1:
            raise ValueError("A random search needs a number of samples of at least 1.")
        rng = random.Random(seed)
        draws = {name: _sampler(name, space[name]) for name in names}
        return [{name: draws[name](rng) for name in names} for _ in range(samples)]
    raise ValueError(f"Unknown search mode {mode!r}; choose grid or random.")


def _grid_values(name: str, values: Any) -> list:
    if not isinstance(values, list) or not values:
        raise ValueError(f"{name}: a grid search needs a list of values, such as 0.001, 0.01.")
    return values


def _sampler(name: str, values: Any):
    if isinstance(values, list) and values:
        return lambda rng: rng.choice(values)
    if not isinstance(values, dict) or not {"min", "max"} <= values.keys():
        raise ValueError(f"{name}: give a list of values or a range such as 1e-4..1e-2.")
    low, high = values["min"], values["max"]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)) or low > high:
        raise ValueError(f"{name}: a range needs two numbers, the smaller first.")
    if name in INTEGER_PARAMS:
        return lambda rng: rng.randint(math.ceil(low), math.floor(high))
    if values.get("log", name == "lr"):
        if low <= 0:
            raise ValueError(f"{name}: a logarithmic range must be above 0.")
        return lambda rng: float(f"{math.exp(rng.uniform(math.log(low), math.log(high))):.3g}")
    return lambda rng: float(f"{rng.uniform(low, high):.4g}")


def check_sweep(request: SweepRequest) -> tuple[list[LaunchPlan], dict[str, str]]:
    """The runs of the sweep, checked like single launches, or the reasons it cannot start."""
    errors: dict[str, str] = {}
    if request.workload == SCRIPT or request.workload not in WORKLOADS:
        return [], {"workload": f"Choose one of the built-in workloads: {', '.join(WORKLOADS)}."}
    if request.metric not in SweepMetric.values:
        errors["metric"] = "Choose accuracy or loss."
    unknown = set(request.space) - set(WORKLOADS[request.workload].params)
    if unknown:
        errors["space"] = f"{request.workload} takes no parameter {', '.join(sorted(unknown))}."
    if not request.space:
        errors["space"] = "Give at least one hyperparameter to search over."
    check_gpus(request, errors)
    if errors:
        return [], errors
    # Counted before anything is built: a grid of 10^9 combinations must not be listed to be refused.
    count = run_count(request.mode, request.space, request.samples)
    if count is not None and not 1 <= count <= settings.RUN_SWEEP_MAX_RUNS:
        return [], {
            "space": f"This search makes {count} runs; the most a sweep may make is {settings.RUN_SWEEP_MAX_RUNS}."
        }
    try:
        combos = expand(request.mode, request.space, request.samples, request.seed)
    except ValueError as error:
        return [], {"space": str(error)}
    return plan_runs(request, combos)


def check_gpus(request: SweepRequest, errors: dict) -> None:
    """k GPUs of a model, or named GPUs, or a node's CPUs; never more GPUs than the fleet has."""
    if request.gpus and request.gpu_model is not None:
        errors["gpus"] = "Name GPUs or ask for a number of GPUs of a model, not both."
    elif request.gpu_model is not None:
        have = len(request.pool())
        if not request.gpu_count or request.gpu_count < 1:
            errors["gpu_count"] = "Ask for at least 1 GPU."
        elif request.gpu_count > have:
            errors["gpu_count"] = (
                f"The fleet has {have} {request.gpu_model.name} GPU(s) a sweep may use; you asked for "
                f"{request.gpu_count}."
            )
    elif request.gpu_count is not None:
        errors["gpu_model"] = "Choose the GPU model of the GPUs to use."
    elif request.gpus and len({gpu.pk for gpu in request.gpus}) != len(request.gpus):
        errors["gpus"] = "A GPU is listed twice."


def run_count(mode: str, space: dict[str, Any], samples: int | None) -> int | None:
    """How many runs the search makes, by arithmetic; None when the space is malformed (expand says why)."""
    if mode == SweepMode.RANDOM:
        return samples if samples and samples >= 1 else None
    if mode == SweepMode.GRID and all(isinstance(values, list) and values for values in space.values()):
        return math.prod(len(values) for values in space.values())
    return None


def plan_runs(request: SweepRequest, combos: list[dict]) -> tuple[list[LaunchPlan], dict[str, str]]:
    """One checked plan per combination; with a pool, checked as if on its first GPU (the real one comes later)."""
    plans, errors = [], {}
    pool = request.pool()
    name = request.name.strip() or f"{request.workload} sweep"
    for number, combo in enumerate(combos, start=1):
        launch_request = LaunchRequest(
            user=request.user,
            workload=request.workload,
            strategy="single",  # each run of a sweep is one process on one GPU or node
            name=f"{name} #{number}",
            project=request.project,
            gpus=pool[:1],
            node=None if pool else request.node,
            hyperparameters={**request.base, **combo},
            placed_later=bool(pool),
        )
        plan, problems = check_launch(launch_request)
        for key, message in problems.items():
            errors.setdefault(key, f"Run {number} ({_describe(combo)}): {message}")
        if plan:
            plans.append(plan)
    return ([], errors) if errors else (plans, {})


def _describe(combo: dict) -> str:
    return ", ".join(f"{key}={value}" for key, value in combo.items())


def launch_sweep(request: SweepRequest, plans: list[LaunchPlan]) -> Sweep:
    """Store the sweep and its runs; runs on a pool wait for GPUs (given after commit), CPU runs are queued."""
    pool = request.pool()
    with transaction.atomic():
        sweep = Sweep.objects.create(
            owner=request.user,
            project=plans[0].project,
            name=request.name.strip() or f"{request.workload} sweep",
            workload=request.workload,
            mode=request.mode,
            space=request.space,
            metric=request.metric,
            gpu_model=None if request.gpus else request.gpu_model,
            gpu_count=(request.gpu_count if request.gpu_model else len(pool)) if pool else None,
        )
        sweep.pool.set(request.gpus)
        for plan in plans:
            launch(plan, sweep=sweep, waits_for_gpu=bool(pool))
        if pool:
            dispatch_soon(sweep.pk)
    return sweep
