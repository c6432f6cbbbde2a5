"""Sweeps: a grid or random search over hyperparameters becomes N single-process runs over the GPUs at hand.

Each run gets one of the chosen GPUs in turn; runs that share a GPU wait in its node's queue until
the GPU is free, so N runs on k GPUs train k at a time.
"""

import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from fleet.choices import RunStrategy, SweepMetric, SweepMode
from fleet.models import GPU, Node, Project
from training.launch import LaunchPlan, LaunchRequest, check_launch, launch
from training.models import SCRIPT, Sweep
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
    if errors:
        return [], errors
    try:
        combos = expand(request.mode, request.space, request.samples, request.seed)
    except ValueError as error:
        return [], {"space": str(error)}
    if not 1 <= len(combos) <= settings.RUN_SWEEP_MAX_RUNS:
        return [], {
            "space": f"This search makes {len(combos)} runs; the most a sweep may make is "
            f"{settings.RUN_SWEEP_MAX_RUNS}."
        }
    return plan_runs(request, combos)


def plan_runs(request: SweepRequest, combos: list[dict]) -> tuple[list[LaunchPlan], dict[str, str]]:
    plans, errors = [], {}
    gpus = sorted(request.gpus, key=lambda gpu: (gpu.node.hostname, gpu.index)) or [None]
    name = request.name.strip() or f"{request.workload} sweep"
    for number, combo in enumerate(combos, start=1):
        gpu = gpus[(number - 1) % len(gpus)]
        launch_request = LaunchRequest(
            user=request.user,
            workload=request.workload,
            strategy=RunStrategy.SINGLE,
            name=f"{name} #{number}",
            project=request.project,
            gpus=[gpu] if gpu else [],
            node=None if gpu else request.node,
            hyperparameters={**request.base, **combo},
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
    with transaction.atomic():
        sweep = Sweep.objects.create(
            owner=request.user,
            project=plans[0].project,
            name=request.name.strip() or f"{request.workload} sweep",
            workload=request.workload,
            mode=request.mode,
            space=request.space,
            metric=request.metric,
        )
        for plan in plans:
            launch(plan, sweep=sweep)
    return sweep
