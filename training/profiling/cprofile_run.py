"""Run a user script under cProfile: ``python -m training.profiling.cprofile_run [--all-ranks] SCRIPT [ARGS…]``.

For scripts that are not torch code (or whose torch loop the fleet cannot reach). The script runs as
``__main__`` with its own arguments; when it ends (returns, exits or raises) this rank writes
``profile.prof`` (pstats format: ``python -m pstats``, snakeviz) and ``summary.json`` (the top
functions by own time) under ``$FLEET_OUTPUT_DIR/profile/rank-<rank>/``. Under torchrun only rank 0
profiles unless ``--all-ranks``. Pure Python: no torch, no Django.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import runpy
import sys

from training.profiling import files

TOP_FUNCTIONS = 25


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.profiling.cprofile_run", description=__doc__)
    parser.add_argument("--all-ranks", action="store_true", help="profile every rank, not only rank 0")
    parser.add_argument("--profile-dir", help="where to write rank-<rank>/ (default: $FLEET_OUTPUT_DIR/profile)")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    rank = int(os.environ.get("RANK", "0"))
    sys.argv = [options.script, *options.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(options.script)))
    if rank != 0 and not options.all_ranks:
        runpy.run_path(options.script, run_name="__main__")
        return 0
    profiler = cProfile.Profile()
    try:
        profiler.runcall(runpy.run_path, options.script, run_name="__main__")
    finally:
        write(profiler, files.rank_dir(options.profile_dir, rank))
    return 0


def write(profiler: cProfile.Profile, out_dir) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(out_dir / files.PSTATS)
    stats = pstats.Stats(profiler)
    summary = {"kind": "cprofile", "functions": top_functions(stats), "total_s": round(stats.total_tt, 6)}
    (out_dir / files.SUMMARY).write_text(json.dumps(summary, allow_nan=False))


def top_functions(stats: pstats.Stats, limit: int = TOP_FUNCTIONS) -> list[dict]:
    """Functions by own time (tottime: not counting the functions they call)."""
    rows = []
    for (filename, line, name), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append(
            {
                "function": name,
                "file": filename,
                "line": line,
                "calls": calls,
                "own_s": round(own, 6),
                "cumulative_s": round(cumulative, 6),
            }
        )
    rows.sort(key=lambda row: row["own_s"], reverse=True)
    return rows[:limit]


if __name__ == "__main__":
    sys.exit(main())
