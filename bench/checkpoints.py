"""Checkpoint save and load time and size for the digits CNN, against a training step measured in the same run,
and what periodic checkpoints cost a whole training run.

    .venv/bin/python bench/checkpoints.py [--saves 50] [--repeats 3] [--every 10]

Part 1 (in this process, one thread): the median of ``--saves`` saves of the full training state (weights,
Adam's two moments, schedule, step, RNG; training/workloads/checkpoints.py) to a temporary directory, of as
many loads, and of 200 training steps at batch 32 as the baseline. Part 1b: the same under DDP(2) and FSDP(2)
(two gloo processes, one thread each, as ``saver.Saver`` saves: DDP's rank 0 alone, FSDP's ranks gathering
the shards to rank 0), with their own step time as the baseline. Part 2: the tiny digits run (8 epochs,
one thread) as the node worker starts it, with a checkpoint every ``--every`` steps and without, taking turns
``--repeats`` times; the ``done`` event's steady samples/s.
"""

from __future__ import annotations

import argparse
import contextlib
import io
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

import torch  # noqa: E402

from training.workloads import arguments, checkpoints, digits_cnn, event_lines, strategies  # noqa: E402
from training.workloads.optimizers import build_optimizer, build_schedule  # noqa: E402
from training.workloads.run_env import run_env  # noqa: E402
from training.workloads.trainer import Trainer  # noqa: E402


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def in_process(saves: int) -> dict[str, float]:
    torch.set_num_threads(1)
    args = arguments.parse_args(digits_cnn, ["--tiny"])
    train, _ = digits_cnn.load_data(args)
    model = digits_cnn.build_model(args)
    optimizer = build_optimizer(model.parameters(), args)
    schedule = build_schedule(optimizer, args, 45)
    single = strategies.get("single")
    loss_fn = torch.nn.CrossEntropyLoss()
    inputs, targets = train.tensors
    step_times = []
    for step in range(200):
        start = time.perf_counter()
        batch = slice((step * 32) % 1400, (step * 32) % 1400 + 32)
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(inputs[batch]), targets[batch]).backward()
        optimizer.step()
        schedule.step()
        step_times.append(time.perf_counter() - start)
    save_times, load_times = [], []
    with tempfile.TemporaryDirectory() as directory:
        saver = checkpoints.Checkpointer(directory)
        path = Path(directory) / checkpoints.FILE
        for _ in range(saves):
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                saver.save(single.training_state(model, optimizer, schedule, 200), 200, "bench")
            save_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            single.restore(checkpoints.load(path), model, optimizer, schedule)
            load_times.append(time.perf_counter() - start)
        size = path.stat().st_size
    parameters = sum(p.numel() for p in model.parameters())
    return {
        "step_ms": median_ms(step_times[20:]),
        "save_ms": median_ms(save_times),
        "save_p90_ms": statistics.quantiles(save_times, n=10)[-1] * 1000,
        "load_ms": median_ms(load_times),
        "bytes": size,
        "parameters": parameters,
    }


def distributed_rank(rank: int, strategy_name: str, saves: int, port: int, directory: str, results) -> None:
    """One of two gloo ranks: 200 steps of its share, then ``saves`` saves and loads as the training loop makes them."""
    import torch.distributed as dist
    from torch.utils.data import DistributedSampler

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    args = arguments.parse_args(digits_cnn, ["--tiny"])
    train, _ = digits_cnn.load_data(args)
    model = digits_cnn.build_model(args)
    strategy = strategies.get(strategy_name)
    trained = strategy.wrap(model, torch.device("cpu"))
    optimizer = build_optimizer(trained.parameters(), args)
    sampler = DistributedSampler(train, num_replicas=2, rank=rank, shuffle=True, seed=0)
    trainer = Trainer(trained, optimizer, train, 32, sampler, torch.device("cpu"), args)
    step_times: list[float] = []
    epoch = 0
    while len(step_times) < 200:
        epoch += 1
        trainer.train_epoch(epoch, lambda loss, samples, seconds: step_times.append(seconds))
    saver = checkpoints.Checkpointer(directory if rank == 0 else None)
    path = Path(directory) / checkpoints.FILE
    save_times, load_times = [], []
    for _ in range(saves):
        dist.barrier()
        start = time.perf_counter()
        state = strategy.training_state(model, optimizer, trainer.schedule, trainer.step)
        if rank == 0:
            with contextlib.redirect_stdout(io.StringIO()):
                saver.save(state, trainer.step, "bench")
        save_times.append(time.perf_counter() - start)
        dist.barrier()  # the file is whole before any rank reads it
        start = time.perf_counter()
        strategy.restore(checkpoints.load(path), model, optimizer, trainer.schedule)
        load_times.append(time.perf_counter() - start)
    if rank == 0:
        results.put(
            {
                "step_ms": median_ms(step_times[20:]),
                "save_ms": median_ms(save_times),
                "save_p90_ms": statistics.quantiles(save_times, n=10)[-1] * 1000,
                "load_ms": median_ms(load_times),
                "bytes": path.stat().st_size,
            }
        )
    dist.barrier()
    dist.destroy_process_group()


def distributed(strategy_name: str, saves: int) -> dict[str, float]:
    import torch.multiprocessing as mp

    from fleet.embedded import free_port

    context = mp.get_context("spawn")
    results = context.Queue()
    with tempfile.TemporaryDirectory() as directory:
        port = free_port()
        procs = [
            context.Process(target=distributed_rank, args=(rank, strategy_name, saves, port, directory, results))
            for rank in range(2)
        ]
        for proc in procs:
            proc.start()
        figures = results.get(timeout=1800)
        for proc in procs:
            proc.join(60)
            if proc.exitcode != 0:
                raise RuntimeError(f"{strategy_name} rank exited with {proc.exitcode}")
    return figures


def run_rate(every: int | None) -> float:
    argv = [sys.executable, "-m", "training.workloads.digits_cnn", "--tiny", "--threads", "1"]
    env = run_env()
    with tempfile.TemporaryDirectory() as directory:
        if every is not None:
            env.update(FLEET_CHECKPOINT_DIR=directory, FLEET_CHECKPOINT_EVERY_STEPS=str(every))
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    found = [e for line in done.stdout.splitlines() if (e := event_lines.parse_event(line))]
    saved = sum(1 for e in found if e["event"] == "checkpoint")
    if every is not None and saved < 8 * 45 // every:
        raise RuntimeError(f"expected a checkpoint every {every} steps, got {saved}")
    return next(e for e in found if e["event"] == "done")["samples_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saves", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--every", type=int, default=10, help="steps between checkpoints in part 2")
    opts = parser.parse_args()
    figures = in_process(opts.saves)
    spread = {strategy_name: distributed(strategy_name, opts.saves) for strategy_name in strategies.under_torchrun()}
    rates: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(opts.repeats):  # round-robin: a burst of other load hits both alike
        rates["off"].append(run_rate(None))
        rates["on"].append(run_rate(opts.every))
        print(rates, file=sys.stderr, flush=True)
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    print(f"{platform.node()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; torch {torch.__version__}")
    print(
        f"digits CNN: {figures['parameters']:,} parameters, checkpoint {figures['bytes']:,} bytes "
        f"({figures['bytes'] / (figures['parameters'] * 4):.2f}x the fp32 weights: Adam keeps two moments)"
    )
    print(f"training step (batch 32, baseline)  {figures['step_ms']:7.2f} ms")
    print(
        f"save                                {figures['save_ms']:7.2f} ms (p90 {figures['save_p90_ms']:.2f}), "
        f"{figures['save_ms'] / figures['step_ms']:.2f} steps"
    )
    print(
        f"load                                {figures['load_ms']:7.2f} ms, "
        f"{figures['load_ms'] / figures['step_ms']:.2f} steps"
    )
    for strategy_name, numbers in spread.items():
        print(
            f"{strategy_name.upper()}(2): checkpoint {numbers['bytes']:,} bytes; step {numbers['step_ms']:.2f} ms; "
            f"save {numbers['save_ms']:.2f} ms (p90 {numbers['save_p90_ms']:.2f}), "
            f"{numbers['save_ms'] / numbers['step_ms']:.2f} steps, {numbers['save_ms'] / figures['save_ms']:.2f}x "
            f"single's save; load {numbers['load_ms']:.2f} ms"
        )
    print(f"whole run, no checkpoints           {off:7.0f} samples/s")
    print(f"whole run, one every {opts.every:>3} steps      {on:7.0f} samples/s, ratio {on / off:.3f}")


if __name__ == "__main__":
    main()
