"""Training benchmark: throughput, DDP scaling, launch time and accuracy per strategy.

    .venv/bin/python bench/training.py [--repeats 3] [--sweep-only | --no-sweep]

Every figure comes from a real run started as the node worker starts it (the
same argument lists, from the repository root) and read from its FLEET_EVENT
lines:

- samples/s: the run's ``done`` figure, the steady training-loop rate (first
  10 steps and all evaluation left out), summed over ranks or workers;
- median-step samples/s: the rate of the run's median step, which shows what
  the loop does when it has its cores on a node that other work shares;
- launch to first step: from just before the process is started to the
  ``first_step`` event's timestamp;
- accuracy: held-out digits accuracy at the end of the default (full) configuration.

On a CPU-only node each DDP rank stands for one device and gets one core
(``--threads 1``); the single process is given both cores.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from training.strategies.ddp import torchrun_argv  # noqa: E402
from training.strategies.hogwild import hogwild_argv  # noqa: E402
from training.workloads import DIGITS_TRAIN_SIZE, WORKLOADS, event_lines  # noqa: E402
from training.workloads.run_env import run_env  # noqa: E402

DIGITS = WORKLOADS["digits_cnn"].module
SWEEP_BATCHES = (16, 32, 64, 128, 256)
SWEEP_STEPS = 150  # per rank, enough past the warm-up for a steady rate
IDLE_TIMEOUT = 90.0  # seconds to wait for an idle node before measuring anyway
IDLE_SEEN: list[float | None] = []
SINGLE = "single process, 2 threads"
DDP1 = "DDP(1), 1 rank x 1 thread"
DDP2 = "DDP(2), 2 ranks x 1 thread"


@dataclass
class Result:
    samples_per_s: float
    median_step: float
    launch_s: float
    accuracy: float | None


def cpu_idle(window: float) -> float:
    """Share of the node's CPU time spent idle over ``window`` seconds (Linux /proc/stat)."""

    def sample() -> tuple[int, int]:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return fields[3] + fields[4], sum(fields)  # idle + iowait, total

    idle0, total0 = sample()
    time.sleep(window)
    idle1, total1 = sample()
    return (idle1 - idle0) / max(1, total1 - total0)


def wait_for_idle(min_idle: float, timeout: float) -> float:
    """Wait until the node is mostly idle, so other work does not land in the figures; the idle share found."""
    deadline = time.monotonic() + timeout
    while (idle := cpu_idle(2.0)) < min_idle and time.monotonic() < deadline:
        pass
    return idle


def measure(argv: list[str]) -> Result:
    started = time.time()
    done = subprocess.run(argv, cwd=REPO, env=run_env(), capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    found = [e for line in done.stdout.splitlines() if (e := event_lines.parse_event(line))]
    first = next(e for e in found if e["event"] == "first_step")
    final = next(e for e in found if e["event"] == "done")
    return Result(final["samples_per_s"], final["median_step_samples_per_s"], first["ts"] - started, final["accuracy"])


def run_all(configs: dict[str, list[str]], repeats: int, min_idle: float) -> dict[str, Result]:
    """Median of each figure over ``repeats`` rounds. The node is shared, so the
    configurations take turns (round-robin) rather than running back to back:
    a burst of someone else's load then hits every strategy alike."""
    runs: dict[str, list[Result]] = {name: [] for name in configs}
    for round_ in range(repeats):
        for name, argv in configs.items():
            idle = wait_for_idle(min_idle, IDLE_TIMEOUT) if min_idle > 0 else None
            runs[name].append(measure(argv))
            IDLE_SEEN.append(idle)
            print(f"  round {round_ + 1}, {name} (idle before {idle}): {runs[name][-1]}", file=sys.stderr, flush=True)
    return {
        name: Result(
            statistics.median(r.samples_per_s for r in results),
            statistics.median(r.median_step for r in results),
            statistics.median(r.launch_s for r in results),
            statistics.median(r.accuracy for r in results) if results[0].accuracy is not None else None,
        )
        for name, results in runs.items()
    }


def strategy_configs() -> dict[str, list[str]]:
    single = [sys.executable, "-m", DIGITS]
    return {
        SINGLE: single,
        "single process, 1 thread": [*single, "--threads", "1"],
        "Hogwild, 2 workers x 1 thread": hogwild_argv("digits_cnn", 2),
        DDP1: torchrun_argv(DIGITS, 1, script_args=["--threads", "1"]),
        DDP2: torchrun_argv(DIGITS, 2, script_args=["--threads", "1"]),
    }


def sweep_configs() -> dict[str, list[str]]:
    """DDP(1) and DDP(2) per per-rank batch size, each over ~SWEEP_STEPS steps per rank."""
    configs = {}
    for batch in SWEEP_BATCHES:
        for nproc in (1, 2):
            epochs = max(2, math.ceil(SWEEP_STEPS * batch * nproc / DIGITS_TRAIN_SIZE))
            args = ["--batch-size", str(batch), "--epochs", str(epochs), "--threads", "1"]
            configs[f"sweep {batch} {nproc}"] = torchrun_argv(DIGITS, nproc, script_args=args)
    return configs


def allreduce_worker() -> None:
    """Under torchrun: time gloo all-reduces of one digits-CNN gradient; rank 0 prints the figures."""
    import torch
    import torch.distributed as dist

    from training.workloads import arguments, digits_cnn

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    model = digits_cnn.build_model(arguments.parse_args(digits_cnn, []))
    grad = torch.zeros(sum(p.numel() for p in model.parameters()))
    for _ in range(20):
        dist.all_reduce(grad)
    times = []
    for _ in range(500):
        begin = time.perf_counter()
        dist.all_reduce(grad)
        times.append(time.perf_counter() - begin)
    if dist.get_rank() == 0:
        print(f"ALLREDUCE {grad.numel()} {min(times) * 1e6:.0f} {statistics.median(times) * 1e6:.0f}", flush=True)
    dist.destroy_process_group()


def allreduce_figures() -> str:
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", __file__]
    done = subprocess.run([*argv, "--allreduce-worker"], cwd=REPO, env=run_env(), capture_output=True, text=True)
    _, params, fastest, median = next(line for line in done.stdout.splitlines() if line.startswith("ALLREDUCE")).split()
    return (
        f"gloo all-reduce of the {int(params):,}-parameter gradient between 2 ranks: "
        f"{fastest} µs fastest, {median} µs median"
    )


def report(results: dict[str, Result], command: str, load: str) -> None:
    print(f"Machine: {platform.node()}, {os.cpu_count()} cores, no GPU; Python {platform.python_version()}.")
    print(f"Load average (1 min) before and after, from other work on the machine: {load}.")
    seen = [idle for idle in IDLE_SEEN if idle is not None]
    if seen:
        print(f"CPU idle in the 2 s before each run: lowest {min(seen):.0%}, median {statistics.median(seen):.0%}.")
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Command: `{command}`\n")
    if SINGLE in results:
        base, base_median = results[SINGLE].samples_per_s, results[SINGLE].median_step
        print(
            "| strategy (digits CNN, default config) | samples/s | vs single | median-step samples/s | vs single "
            "| launch to first step | accuracy |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, r in results.items():
            if name.startswith("sweep"):
                continue
            print(
                f"| {name} | {r.samples_per_s:,.0f} | {r.samples_per_s / base:.2f}x | {r.median_step:,.0f} "
                f"| {r.median_step / base_median:.2f}x | {r.launch_s:.1f} s | {r.accuracy:.2%} |"
            )
        one, two = results[DDP1], results[DDP2]
        print(
            f"\nDDP(2) scaling efficiency at the default batch: {two.samples_per_s / (2 * one.samples_per_s):.0%} "
            f"(median steps: {two.median_step / (2 * one.median_step):.0%})\n"
        )
    if f"sweep {SWEEP_BATCHES[0]} 1" in results:
        print(
            "| per-rank batch | DDP(1) samples/s | DDP(2) samples/s | scaling efficiency "
            "| DDP(1) median step | DDP(2) median step | efficiency (median steps) |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for batch in SWEEP_BATCHES:
            one, two = results[f"sweep {batch} 1"], results[f"sweep {batch} 2"]
            print(
                f"| {batch} | {one.samples_per_s:,.0f} | {two.samples_per_s:,.0f} "
                f"| {two.samples_per_s / (2 * one.samples_per_s):.0%} | {one.median_step:,.0f} "
                f"| {two.median_step:,.0f} | {two.median_step / (2 * one.median_step):.0%} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="rounds; each figure is the median over them")
    parser.add_argument("--no-sweep", action="store_true", help="skip the batch-size sweep")
    parser.add_argument(
        "--min-idle",
        type=float,
        default=0.0,
        help="before each run, wait (up to 90 s) until this share of the node's CPU time is idle over 2 s",
    )
    parser.add_argument("--sweep-only", action="store_true", help="only the batch-size sweep")
    parser.add_argument("--allreduce-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.allreduce_worker:
        return allreduce_worker()
    command = "python bench/training.py " + " ".join(sys.argv[1:])
    load_before = os.getloadavg()[0]
    configs = {} if args.sweep_only else strategy_configs()
    if not args.no_sweep:
        configs |= sweep_configs()
    results = run_all(configs, args.repeats, args.min_idle)
    allreduce = allreduce_figures()
    report(results, command.strip(), f"{load_before:.1f} / {os.getloadavg()[0]:.1f}")
    print(f"\n{allreduce}.")


if __name__ == "__main__":
    main()
