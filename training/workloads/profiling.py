"""The torch profiler over a few steps of a workload's training loop, and what it leaves behind.

``--profile`` records ``--profile-active`` steps after ``--profile-wait`` steps of nothing and
``--profile-warmup`` steps whose records are thrown away (torch.profiler.schedule, once). When the
window closes it writes ``rank-<rank>/trace.json`` (Chrome trace format) and ``rank-<rank>/summary.json``
(top operators by self CPU time, the step-time split) under the profile directory, then stops: the
steps after it run without a profiler, and the steps before it pay one counter check (it starts when the
wait is over).
"""

from __future__ import annotations

import argparse
import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from training.profiling import files

DATA_SPAN = "fleet::data_loading"
STEP_PREFIX = "ProfilerStep"  # "ProfilerStep#7" in the trace, "ProfilerStep*" in events()
# Collectives as the profiler names them under gloo and nccl (c10d::allreduce_, gloo:all_reduce, nccl:all_gather …).
COMMUNICATION = ("allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter", "broadcast", "nccl:", "gloo:")
TOP_OPERATORS = 25
NO_SPAN = contextlib.nullcontext()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("profiling")
    group.add_argument("--profile", action="store_true", help="record a few steps with the torch profiler")
    group.add_argument("--profile-wait", type=int, default=5, help="steps before the profiler starts (%(default)s)")
    group.add_argument("--profile-warmup", type=int, default=2, help="steps recorded and thrown away (%(default)s)")
    group.add_argument("--profile-active", type=int, default=5, help="steps recorded (%(default)s)")
    group.add_argument(
        "--profile-ranks", choices=("0", "all"), default="0", help="profile rank 0 only, or every rank (%(default)s)"
    )
    group.add_argument(
        "--profile-dir", help="where to write rank-<rank>/ (default: $FLEET_OUTPUT_DIR/profile, else ./profile)"
    )


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    problem = files.schedule_problem(args.profile_wait, args.profile_warmup, args.profile_active)
    if args.profile and problem:
        parser.error(problem)


@dataclass(frozen=True)
class Window:
    wait: int
    warmup: int
    active: int

    @property
    def end(self) -> int:
        return self.wait + self.warmup + self.active


class StepProfiler:
    """Drives torch.profiler over one window of steps; ``step()`` after every training step."""

    def __init__(self, window: Window, out_dir: Path, device: torch.device) -> None:
        self.window = window
        self.out_dir = out_dir
        self.steps = 0
        activities = [ProfilerActivity.CPU]
        if device.type == "cuda":
            activities.append(ProfilerActivity.CUDA)
        # The wait is counted here, not by torch's schedule: profile.step() opens a record_function for
        # every step even while waiting, a cost the steps it does not record should not pay
        # (docs/benchmarks.md#the-profiler-on-the-steps-it-does-not-record).
        self.profiler = profile(
            activities=activities,
            schedule=schedule(wait=0, warmup=window.warmup, active=window.active, repeat=1),
            on_trace_ready=self._write,
        )
        self.running = True
        self.started = False
        if window.wait == 0:
            self._start()

    def _start(self) -> None:
        self.started = True
        self.profiler.start()

    def data_span(self):
        """A span around data loading while the profiler records; nothing otherwise."""
        if self.window.wait <= self.steps < self.window.end:
            return record_function(DATA_SPAN)
        return NO_SPAN

    def step(self) -> None:
        if not self.running:
            return
        self.steps += 1
        if not self.started:
            if self.steps >= self.window.wait:
                self._start()
            return
        self.profiler.step()
        if self.steps >= self.window.end:
            self.close()

    def close(self) -> None:
        """Stop the profiler; a window cut short (the run ended first) still writes what it recorded."""
        if self.running:
            self.running = False
            if self.started:
                self.profiler.stop()

    def recorded_steps(self) -> int:
        """Steps finished inside the active part (fewer than ``active`` when the run ended first)."""
        return max(0, min(self.steps, self.window.end) - self.window.wait - self.window.warmup)

    def _write(self, prof: profile) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(self.out_dir / files.TRACE))
        summary = {
            "kind": "torch",
            "window": {"wait": self.window.wait, "warmup": self.window.warmup, "active": self.window.active},
            "operators": top_operators(prof),
            "split": step_split(prof, self.recorded_steps()),
        }
        (self.out_dir / files.SUMMARY).write_text(json.dumps(summary, allow_nan=False))


def top_operators(prof: profile, limit: int = TOP_OPERATORS) -> list[dict[str, Any]]:
    """Operators by self CPU time (the time spent in the operator itself, not in what it calls)."""
    rows = [
        row
        for row in prof.key_averages()
        if not row.key.startswith(STEP_PREFIX) and row.key != DATA_SPAN and row.self_cpu_time_total > 0
    ]
    rows.sort(key=lambda row: row.self_cpu_time_total, reverse=True)
    return [
        {
            "name": row.key,
            "calls": row.count,
            "self_cpu_us": round(row.self_cpu_time_total, 1),
            "cpu_total_us": round(row.cpu_time_total, 1),
            "self_cuda_us": _device_time(row),
        }
        for row in rows[:limit]
    ]


def _device_time(row) -> float | None:
    value = getattr(row, "self_device_time_total", None)
    return round(value, 1) if value else None


def step_split(prof: profile, recorded: int | None = None) -> dict[str, Any]:
    """Where the recorded steps' wall time went: data loading, communication (where any), compute (the rest).

    Communication is the union of the collectives' spans inside the steps. Under DDP the all-reduce
    overlaps the backward pass, so this is the time a collective was in flight, not time lost to it.
    """
    events = list(prof.events())
    # A window closed early (the run ended) leaves the unfinished step after the last one open: not a step.
    steps = sorted(_span(e) for e in events if e.name.startswith(STEP_PREFIX))[:recorded]
    total = sum(end - start for start, end in steps)
    data = _union([_clip(_span(e), steps) for e in events if e.name == DATA_SPAN])
    collectives = [_span(e) for e in events if _is_collective(e.name)]
    communication = _union([_clip(span, steps) for span in collectives]) if collectives else None
    compute = max(0.0, total - data - (communication or 0.0))
    return {
        "steps": len(steps),
        "step_us": round(total / len(steps), 1) if steps else None,
        "total_us": round(total, 1),
        "data_us": round(data, 1),
        "communication_us": None if communication is None else round(communication, 1),
        "compute_us": round(compute, 1),
    }


def _span(event) -> tuple[float, float]:
    return float(event.time_range.start), float(event.time_range.end)


def _is_collective(name: str) -> bool:
    lowered = name.lower()
    return any(marker in lowered for marker in COMMUNICATION)


def _clip(span: tuple[float, float], steps: list[tuple[float, float]]) -> tuple[float, float]:
    """The part of ``span`` inside the recorded steps (a collective may start before the first)."""
    if not steps:
        return span
    start, end = min(s for s, _ in steps), max(e for _, e in steps)
    return max(span[0], start), min(span[1], end)


def _union(spans: list[tuple[float, float]]) -> float:
    """Total length covered by possibly nested or overlapping spans."""
    covered, reach = 0.0, float("-inf")
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if end <= reach:
            continue
        covered += end - max(start, reach)
        reach = end
    return covered


def profiler_for(args: argparse.Namespace, rank: int, device: torch.device) -> StepProfiler | None:
    """This process's profiler, or None when profiling is off or another rank does it."""
    if not args.profile or (args.profile_ranks == "0" and rank != 0):
        return None
    window = Window(args.profile_wait, args.profile_warmup, args.profile_active)
    return StepProfiler(window, files.rank_dir(args.profile_dir, rank), device)
