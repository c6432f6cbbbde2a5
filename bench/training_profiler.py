"""The torch profiler's cost on the training steps it does not record, against the same loop without it.

    .venv/bin/python bench/training_profiler.py [--pairs 25] [--workload synthetic] [--epochs 8]

Each trial is a fresh process training the workload in one thread with ``trainer.Trainer``, timing every
step. Trials come in on/off *pairs* run back to back, the order alternating from pair to pair (off-on,
on-off, ...), so that a burst of other load or a slow drift of the machine hits both arms alike and
neither arm always goes first. The profiled trials use a window of ``--wait`` steps, 2 warm-up and 5
recorded steps (the launch form's shape, with a long wait so that the waiting phase can be measured
too). Two phases are compared, by step index:

- *waiting*: steps 20 … wait-1 (the profiler is started, its schedule not yet recording);
- *after*: the steps after the window (the profiler is stopped).

Each step is timed twice: wall clock (what the run's throughput sees) and this thread's CPU time (the work
the step did; the trial runs torch in one thread, so a burst of other load on the machine, which makes
the wall clock wait, barely moves it). A trial's figure for a phase and a clock is its median step time
over those steps; a pair's ratio is on/off. The
answer is the median of the pairs' ratios − 1, with its spread: the interquartile range of the ratios
and a distribution-free 95 % confidence interval of the median (order statistics of the binomial), and
how many pairs had the profiled trial slower. The load average is printed before, after and per pair.

Last, *direct*: the code a waiting step runs for the profiler (the trainer's ``data_span()`` and
``step()`` calls on a profiler still waiting), timed in this process against the same loop with no
profiler, in alternating rounds of many calls, CPU time. Its difference per step, over the off trials'
median CPU step, is the waiting phase's overhead measured without the run-to-run noise of whole trials.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from training.workloads.run_env import run_env  # noqa: E402

FIRST_STEP = 20  # leave out the first steps (allocator, caches) in both arms
WARMUP, ACTIVE = 2, 5


def trial(workload: str, epochs: int, profile: bool, wait: int) -> dict[str, list[float]]:
    """One arm in this process: the wall-clock and the CPU seconds (this thread's) of every training step."""
    import torch

    from training.workloads import arguments, profiling
    from training.workloads.distributed import seed_everything
    from training.workloads.optimizers import build_optimizer
    from training.workloads.trainer import Trainer

    module = importlib.import_module(f"training.workloads.{workload}")
    args = arguments.parse_args(module, ["--epochs", str(epochs), "--threads", "1"])
    torch.set_num_threads(1)
    seed_everything(0)
    train, _ = module.load_data(args)
    model = module.build_model(args)
    sampler = torch.utils.data.DistributedSampler(train, num_replicas=1, rank=0, shuffle=True, seed=0)
    optimizer = build_optimizer(model.parameters(), args)
    profiler = None
    if profile:
        window = profiling.Window(wait, WARMUP, ACTIVE)
        profiler = profiling.StepProfiler(window, Path(tempfile.mkdtemp(prefix="bench-profile-")), torch.device("cpu"))
    trainer = Trainer(model, optimizer, train, args.batch_size, sampler, torch.device("cpu"), args, profiler)
    wall: list[float] = []
    cpu: list[float] = []
    last_cpu = [time.thread_time()]

    def took_step(loss, samples, took) -> None:
        now = time.thread_time()
        wall.append(took)
        cpu.append(now - last_cpu[0])
        last_cpu[0] = now

    for epoch in range(1, epochs + 1):
        trainer.train_epoch(epoch, took_step)
        if profiler and not profiler.running:
            trainer.profiler = profiler = None
    return {"wall": wall, "cpu": cpu}


def run_trial(workload: str, epochs: int, profile: bool, wait: int) -> dict[str, list[float]]:
    argv = [sys.executable, __file__, "--trial", "on" if profile else "off", "--workload", workload]
    argv += ["--epochs", str(epochs), "--wait", str(wait)]
    done = subprocess.run(argv, cwd=REPO, env=run_env(), capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def phases(steps: dict[str, list[float]], wait: int) -> dict[str, float]:
    """Median step time of each phase, by each clock: {"cpu waiting": …, "wall after": …}."""
    end = wait + WARMUP + ACTIVE
    medians = {}
    for clock, seconds in steps.items():
        medians[f"{clock} waiting"] = statistics.median(seconds[FIRST_STEP:wait])
        medians[f"{clock} after"] = statistics.median(seconds[end + 1 :])
    return medians


def direct(rounds: int = 9, calls: int = 200_000) -> list[float]:
    """Seconds of CPU a waiting step spends in the profiler's calls, one figure per alternating round."""
    import torch

    from training.workloads import profiling

    waiting = profiling.StepProfiler(
        profiling.Window(rounds * calls + 10, WARMUP, ACTIVE),
        Path(tempfile.mkdtemp(prefix="bench-profile-")),
        torch.device("cpu"),
    )

    def loop(profiler) -> float:  # the trainer's profiler lines (training/workloads/trainer.py), nothing else
        started = time.thread_time()
        for _ in range(calls):
            with profiler.data_span() if profiler else profiling.NO_SPAN:
                pass
            if profiler:
                profiler.step()
        return time.thread_time() - started

    added = []
    for index in range(rounds):
        order = (None, waiting) if index % 2 == 0 else (waiting, None)
        took = {id(arm): loop(arm) for arm in order}
        added.append((took[id(waiting)] - took[id(None)]) / calls)
    waiting.close()
    return added


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median: the widest order statistics whose binomial tails stay
    under (1 - confidence) / 2 each; the whole range when there are too few values."""
    ordered = sorted(values)
    n = len(ordered)
    tail = (1 - confidence) / 2
    below = 0  # how many order statistics may be cut from each end
    cumulative = 0.0
    for k in range(n // 2):
        cumulative += math.comb(n, k) / 2**n
        if cumulative > tail:
            break
        below = k + 1
    if not below:
        return ordered[0], ordered[-1]
    return ordered[below - 1], ordered[n - below]


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def summary(phase: str, pairs: list[dict]) -> str:
    ratios = [pair["on"][phase] / pair["off"][phase] for pair in pairs]
    middle = statistics.median(ratios)
    low, high = median_interval(ratios)
    q1, q3 = quartiles(ratios)
    off = statistics.median(pair["off"][phase] for pair in pairs)
    on = statistics.median(pair["on"][phase] for pair in pairs)
    slower = sum(ratio > 1 for ratio in ratios)
    return (
        f"{phase:12s} off {off * 1e3:6.3f} ms/step  on {on * 1e3:6.3f} ms/step  "
        f"overhead {100 * (middle - 1):+.2f} % (median of {len(ratios)} paired ratios; "
        f"95 % CI {100 * (low - 1):+.2f} … {100 * (high - 1):+.2f} %, "
        f"IQR {100 * (q1 - 1):+.2f} … {100 * (q3 - 1):+.2f} %, "
        f"range {100 * (min(ratios) - 1):+.1f} … {100 * (max(ratios) - 1):+.1f} %; on slower in {slower}/{len(ratios)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=25, help="on/off pairs (each two fresh processes)")
    parser.add_argument("--repeats", type=int, dest="pairs", help=argparse.SUPPRESS)  # the old name
    parser.add_argument("--workload", default="synthetic", choices=["digits_cnn", "synthetic"])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--wait", type=int, default=200)
    parser.add_argument("--trial", choices=["off", "on"], help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.trial:
        print(json.dumps(trial(opts.workload, opts.epochs, opts.trial == "on", opts.wait)))
        return
    load_before = os.getloadavg()
    pairs: list[dict] = []
    steps = 0
    for index in range(opts.pairs):
        order = ("off", "on") if index % 2 == 0 else ("on", "off")
        pair: dict = {"order": "-".join(order), "load": os.getloadavg()[0]}
        for arm in order:
            times = run_trial(opts.workload, opts.epochs, arm == "on", opts.wait)
            steps = len(times["wall"])
            pair[arm] = phases(times, opts.wait)
        pairs.append(pair)
        print(json.dumps(pair), file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    loads = [pair["load"] for pair in pairs]
    before, after = ("/".join(f"{x:.1f}" for x in load) for load in (load_before, load_after))
    print(
        f"{platform.node()}, {os.cpu_count()} cores; load (1/5/15 min) before {before}, after {after}, "
        f"per pair {min(loads):.1f}–{max(loads):.1f}"
    )
    print(
        f"{opts.workload}, {opts.epochs} epochs ({steps} steps), 1 thread, "
        f"window wait {opts.wait} + {WARMUP} + {ACTIVE}, {opts.pairs} pairs, order alternating"
    )
    for phase in ("cpu waiting", "cpu after", "wall waiting", "wall after"):
        print(summary(phase, pairs))
    added = direct()
    step = statistics.median(pair["off"]["cpu waiting"] for pair in pairs)
    print(
        f"direct       a waiting step's profiler calls: {statistics.median(added) * 1e9:+.0f} ns CPU (median of "
        f"{len(added)} alternating rounds, {min(added) * 1e9:+.0f} … {max(added) * 1e9:+.0f} ns) = "
        f"{100 * statistics.median(added) / step:+.3f} % of the off trials' {step * 1e3:.3f} ms CPU step"
    )


if __name__ == "__main__":
    main()
