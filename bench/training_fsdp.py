"""FSDP(2) against DDP(2): steady samples/s of the same workload, taking turns in one run.

    .venv/bin/python bench/training_fsdp.py [--repeats 1] [--workload digits_cnn] [--extra ARGS]

Both start as the node worker starts them (torchrun, one process per device, one thread per rank
on a CPU node) and report the ``done`` event's steady rate (first 10 steps and evaluation left out).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from training.strategies import NodeShare, get  # noqa: E402
from training.workloads import WORKLOADS, event_lines  # noqa: E402
from training.workloads.run_env import run_env  # noqa: E402


def rate(argv: list[str]) -> tuple[float, float]:
    done = subprocess.run(argv, cwd=REPO, env=run_env(), capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    final = next(
        e for line in done.stdout.splitlines() if (e := event_lines.parse_event(line)) and e["event"] == "done"
    )
    return final["samples_per_s"], final["accuracy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--workload", default="digits_cnn", choices=["digits_cnn", "synthetic"])
    parser.add_argument("--extra", default="--tiny --threads 1", help="workload flags (one string)")
    opts = parser.parse_args()
    share = dict(processes=2, module=WORKLOADS[opts.workload].module, workload=opts.workload, args=opts.extra.split())
    configs = {name: get(name).command(NodeShare(**share)) for name in ("ddp", "fsdp")}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in configs}
    for _ in range(opts.repeats):
        for name, argv in configs.items():  # round-robin: a burst of other load hits both alike
            results[name].append(rate(argv))
            print(name, results[name][-1], file=sys.stderr, flush=True)
    ddp = statistics.median(r for r, _ in results["ddp"])
    fsdp = statistics.median(r for r, _ in results["fsdp"])
    print(f"{platform.node()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {opts.workload} {opts.extra}")
    print(f"DDP(2)  {ddp:8.0f} samples/s, accuracy {results['ddp'][-1][1]:.3f}")
    print(f"FSDP(2) {fsdp:8.0f} samples/s, accuracy {results['fsdp'][-1][1]:.3f}")
    print(f"FSDP/DDP {fsdp / ddp:.2f}")


if __name__ == "__main__":
    main()
