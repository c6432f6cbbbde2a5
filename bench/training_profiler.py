"""The torch profiler's cost on the training steps it does not record, against the same loop without it.

    .venv/bin/python bench/training_profiler.py [--repeats 5] [--workload synthetic] [--epochs 6]

Each trial is a fresh process training the workload in one thread with ``common.Trainer``, timing every
step; trials with the profiler off and on take turns (a burst of other load hits both alike). The
profiled trials use a window of ``--wait`` steps, 2 warm-up and 5 recorded steps (the launch form's
shape, with a long wait so that the waiting phase can be measured too). Compared per step index:

- *waiting*: steps 20 … wait-1 (the profiler is started, its schedule not yet recording);
- *after*: the steps after the window (the profiler is stopped).

Each phase's figure is the median step time over those steps, then the median over the trials; the
overhead is on/off − 1.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from training.run_env import run_env  # noqa: E402

FIRST_STEP = 20  # leave out the first steps (allocator, caches) in both arms
WARMUP, ACTIVE = 2, 5


def trial(workload: str, epochs: int, profile: bool, wait: int) -> list[float]:
    """One arm in this process: the seconds of every training step."""
    import torch

    from training.workloads import common, profiling

    module = importlib.import_module(f"training.workloads.{workload}")
    args = common.parse_args(module, ["--epochs", str(epochs), "--threads", "1"])
    torch.set_num_threads(1)
    common.seed_everything(0)
    train, _ = module.load_data(args)
    model = module.build_model(args)
    sampler = torch.utils.data.DistributedSampler(train, num_replicas=1, rank=0, shuffle=True, seed=0)
    optimizer = common.build_optimizer(model.parameters(), args)
    profiler = None
    if profile:
        window = profiling.Window(wait, WARMUP, ACTIVE)
        profiler = profiling.StepProfiler(window, Path(tempfile.mkdtemp(prefix="bench-profile-")), torch.device("cpu"))
    trainer = common.Trainer(model, optimizer, train, args.batch_size, sampler, torch.device("cpu"), args, profiler)
    seconds: list[float] = []
    for epoch in range(1, epochs + 1):
        trainer.train_epoch(epoch, lambda loss, samples, took: seconds.append(took))
        if profiler and not profiler.running:
            trainer.profiler = profiler = None
    return seconds


def run_trial(workload: str, epochs: int, profile: bool, wait: int) -> list[float]:
    argv = [sys.executable, __file__, "--trial", "on" if profile else "off", "--workload", workload]
    argv += ["--epochs", str(epochs), "--wait", str(wait)]
    done = subprocess.run(argv, cwd=REPO, env=run_env(), capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def phases(seconds: list[float], wait: int) -> dict[str, float]:
    end = wait + WARMUP + ACTIVE
    return {
        "waiting": statistics.median(seconds[FIRST_STEP:wait]),
        "after": statistics.median(seconds[end + 1 :]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workload", default="synthetic", choices=["digits_cnn", "synthetic"])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--wait", type=int, default=200)
    parser.add_argument("--trial", choices=["off", "on"], help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.trial:
        print(json.dumps(trial(opts.workload, opts.epochs, opts.trial == "on", opts.wait)))
        return
    results: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    steps = 0
    for _ in range(opts.repeats):
        for arm in ("off", "on"):
            seconds = run_trial(opts.workload, opts.epochs, arm == "on", opts.wait)
            steps = len(seconds)
            results[arm].append(phases(seconds, opts.wait))
            print(arm, results[arm][-1], file=sys.stderr, flush=True)
    print(
        f"{platform.node()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {opts.workload}, "
        f"{opts.epochs} epochs ({steps} steps), 1 thread, window wait {opts.wait} + {WARMUP} + {ACTIVE}, "
        f"{opts.repeats} trials per arm"
    )
    for phase in ("waiting", "after"):
        off = statistics.median(r[phase] for r in results["off"])
        on = statistics.median(r[phase] for r in results["on"])
        ratios = sorted(b[phase] / a[phase] for a, b in zip(results["off"], results["on"], strict=True))
        print(
            f"{phase:8s} off {off * 1e3:7.3f} ms/step  on {on * 1e3:7.3f} ms/step  "
            f"overhead {100 * (on / off - 1):+.2f} % (per-pair ratios {ratios[0]:.3f}–{ratios[-1]:.3f})"
        )


if __name__ == "__main__":
    main()
