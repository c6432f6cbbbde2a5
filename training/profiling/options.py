"""A launch's profiler options: checked before anything starts, stored on the run, turned into flags.

Pure Python: no torch, no Django. Off unless asked for. A built-in workload is profiled with the
torch profiler over a window of its training steps (``wait`` steps of nothing, ``warmup`` steps
recorded and thrown away, ``active`` steps recorded); a user script with cProfile from start to end.
``ranks`` is "0" (rank 0 only) or "all".
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from training.profiling import files
from training.strategies.base import Strategy

FIELDS = ("kind", "wait", "warmup", "active", "ranks")
WINDOW = ("wait", "warmup", "active")
DEFAULTS: dict[str, Any] = {"wait": 5, "warmup": 2, "active": 5, "ranks": "0"}
RANKS = ("0", "all")
KINDS = ("torch", "cprofile")
CPROFILE_RUNNER = "training.profiling.cprofile_run"


class ProfilerRefused(ValueError):
    """The options cannot profile this launch; the message says why and what to change."""


class Profiled(Protocol):
    """What the checks read of a workload (training.workloads.Workload), named here so that profiling does not
    import the workloads, which import its file names."""

    profiler: str | None  # "torch", "cprofile" or None
    train_size: int | None


def check(raw: Any, spec: Profiled, who: str, strategy: Strategy | None) -> dict[str, Any]:
    """The clean options ({} for off), or ProfilerRefused."""
    if raw in (None, False, "", {}):
        return {}
    if not isinstance(raw, dict):
        raise ProfilerRefused('Profiler options must be an object such as {"wait": 5, "warmup": 2, "active": 5}.')
    unknown = sorted(str(key) for key in raw if key not in FIELDS)
    if unknown:
        raise ProfilerRefused(f"The profiler takes no option {unknown[0]!r}; it takes {', '.join(FIELDS)}.")
    if spec.profiler is None:
        raise ProfilerRefused(f"{who} has no training loop to profile; launch it without the profiler.")
    kind = str(raw.get("kind") or spec.profiler).strip().lower()
    if kind != spec.profiler:
        raise ProfilerRefused(f"{who} is profiled with {spec.profiler}, not {kind!r}.")
    if strategy is not None and not strategy.profiles:
        raise ProfilerRefused(f"A {strategy.short} run cannot be profiled; choose another strategy to profile it.")
    clean: dict[str, Any] = {"kind": kind, "ranks": _ranks(raw.get("ranks", DEFAULTS["ranks"]))}
    if kind == "cprofile":
        given = [name for name in WINDOW if raw.get(name) not in (None, "")]
        if given:
            raise ProfilerRefused("cProfile records the whole script; wait, warm-up and active steps are for torch.")
        return clean
    for name in WINDOW:
        value = raw.get(name)
        clean[name] = _whole(DEFAULTS[name] if value in (None, "") else value, name)
    problem = files.schedule_problem(clean["wait"], clean["warmup"], clean["active"])
    if problem:
        raise ProfilerRefused(problem)
    return clean


def check_length(options: dict[str, Any], spec: Profiled, params: dict[str, Any]) -> None:
    """Refuse a window longer than the run: the profiler would record nothing worth reading."""
    if options.get("kind") != "torch" or spec.train_size is None:
        return
    try:
        world = int(params["processes"]) * int(params.get("nodes", 1))
        per_process = math.ceil(spec.train_size / world)
        steps = int(params["epochs"]) * math.ceil(per_process / int(params["batch_size"]))
    except (KeyError, TypeError, ValueError):
        return  # another field is wrong and has its own message
    window = options["wait"] + options["warmup"] + options["active"]
    if window > steps:
        raise ProfilerRefused(
            f"The profiler's window ({window} steps: wait + warm-up + active) is longer than the run "
            f"({steps} steps per process); shorten it or train longer."
        )


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise ProfilerRefused(f"Profiler {name} must be a whole number of steps.")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ProfilerRefused(f"Profiler {name} must be a whole number of steps, not {value!r}.")


def _ranks(value: Any) -> str:
    text = str(value).strip().lower()
    if text not in RANKS:
        raise ProfilerRefused(f"Profiler ranks must be '0' (rank 0 only) or 'all', not {value!r}.")
    return text


def workload_flags(options: dict[str, Any]) -> list[str]:
    """The torch profiler's flags for a built-in workload (training.workloads.profiling)."""
    if options.get("kind") != "torch":
        return []
    return [
        "--profile",
        "--profile-wait",
        str(options["wait"]),
        "--profile-warmup",
        str(options["warmup"]),
        "--profile-active",
        str(options["active"]),
        "--profile-ranks",
        options["ranks"],
    ]


def cprofile_prefix(options: dict[str, Any]) -> list[str]:
    """The cProfile wrapper's arguments before the script path (``python -m training.profiling.cprofile_run …``)."""
    return ["--all-ranks"] if options.get("ranks") == "all" else []
