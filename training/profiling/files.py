"""Where a profiled run's processes leave their results, and the limits of a profiler window.

Pure Python (no torch, no Django): the workloads, the cProfile wrapper, the launch checks and the
node worker's collector all read these names. A process writes under
``$FLEET_OUTPUT_DIR/profile/rank-<rank>/``: ``summary.json`` and either ``trace.json`` (torch
profiler, Chrome trace format) or ``profile.prof`` (cProfile, for pstats and snakeviz).
"""

from __future__ import annotations

import os
from pathlib import Path

DIR = "profile"
SUMMARY = "summary.json"
TRACE = "trace.json"
PSTATS = "profile.prof"

MAX_WAIT = 10_000
MAX_WARMUP = 100
MAX_ACTIVE = 50  # a trace grows with every recorded step; 50 keeps it to tens of MB for a large model


def schedule_problem(wait: int, warmup: int, active: int) -> str | None:
    """Why these window sizes are refused, or None."""
    if not 0 <= wait <= MAX_WAIT:
        return f"Profiler wait must be between 0 and {MAX_WAIT} steps."
    if not 0 <= warmup <= MAX_WARMUP:
        return f"Profiler warm-up must be between 0 and {MAX_WARMUP} steps."
    if not 1 <= active <= MAX_ACTIVE:
        return f"Profiler active steps must be between 1 and {MAX_ACTIVE}."
    return None


def profile_root(explicit: str | None = None) -> Path:
    """``explicit``, else $FLEET_OUTPUT_DIR/profile (the node worker's run directory), else ./profile."""
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("FLEET_OUTPUT_DIR") or ".") / DIR


def rank_dir(explicit: str | None, rank: int) -> Path:
    return profile_root(explicit) / f"rank-{rank}"
