"""Pieces every training workload shares: arguments, device, seeding,
distributed setup, signal handling, event reporting and a small Trainer.

A workload module provides ``NAME``, ``DEFAULTS``, ``TINY`` (a fast configuration for
tests), ``add_arguments(parser)``, ``load_data(args)`` and ``build_model(args)``;
``run(module, argv)`` then trains it in one process or as one rank of torchrun.
The Hogwild launcher reuses the same pieces in its worker processes.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import signal
import socket
import statistics
import sys
import time
from collections import deque
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import BatchSampler, DistributedSampler, TensorDataset

from training.workloads import checkpoints, cpu_ddp, event_lines, parallel, profiling
from training.workloads.git import git_commit
from training.workloads.step_csv import StepCSV, output_file
from training.workloads.torch_build import cudnn_text

WARMUP_STEPS = 10
LR_SCHEDULES = ("cosine", "constant")


# --- stopping on a signal -------------------------------------------------


class Stopped(BaseException):
    """Raised in the main thread when SIGTERM or SIGINT arrives.

    A BaseException so that no ``except Exception`` on the way swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum


_stop_signal: int | None = None
# While a loop that checkpoints runs, a signal is only noted: the loop saves at the next step and leaves.
_polite = False


def install_signal_handlers() -> None:
    """Turn SIGTERM/SIGINT into ``Stopped`` so the run ends at the next bytecode (see ``polite_stops``)."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _on_signal)


def _on_signal(signum: int, frame: Any) -> None:
    global _stop_signal
    if _stop_signal is None:
        _stop_signal = signum
        if not _polite:
            raise Stopped(signum)


def polite_stops(on: bool = True) -> None:
    """From now on a stop signal is noted (``stop_signal()``) rather than raised, or raised again."""
    global _polite
    _polite = on


def stop_signal() -> int | None:
    """The stop signal received so far, if any."""
    return _stop_signal


def exit_now(code: int, message: str) -> None:
    """Leave at once: after a signal, a peer rank may be gone and a clean
    shutdown of the process group could block on it."""
    print(message, file=sys.stderr)
    leave_without_teardown(code)


def leave_without_teardown(code: int) -> None:
    """End the process with its output flushed but without the interpreter's teardown."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def guarded(main_fn, *args: Any) -> int:
    """Run ``main_fn`` and turn a stop signal into exit code 128+signum.

    An error raised while stopping (a collective failing because the peer rank
    already left) is part of the stop, not a crash of its own.
    """
    try:
        return main_fn(*args) or 0
    except Stopped as stop:
        exit_now(stop.exit_code, f"stopped by {stop}")
    except BaseException:
        if _stop_signal is not None:
            exit_now(128 + _stop_signal, f"stopped by {signal.Signals(_stop_signal).name}")
        raise
    return 0


class ParentWatch:
    """Ends a worker whose launcher died without ending it.

    torchrun starts each worker in a session of its own, so a SIGKILL aimed at
    torchrun's process group misses them; checking the parent each step (one
    cheap system call) keeps such orphans from training on, unseen.
    """

    def __init__(self) -> None:
        self.parent = os.getppid()

    def check(self) -> None:
        if os.getppid() != self.parent:
            exit_now(1, "the launcher is gone; stopping")


# --- environment ------------------------------------------------------------


@dataclass(frozen=True)
class DistEnv:
    """Where this process sits in a torchrun launch (one process when absent)."""

    world_size: int = 1
    rank: int = 0
    local_rank: int = 0
    local_world_size: int = 1
    launched: bool = False

    @classmethod
    def from_environ(cls, environ: dict[str, str] | None = None) -> DistEnv:
        environ = os.environ if environ is None else environ
        if "WORLD_SIZE" not in environ:
            return cls()
        return cls(
            world_size=int(environ["WORLD_SIZE"]),
            rank=int(environ["RANK"]),
            local_rank=int(environ.get("LOCAL_RANK", "0")),
            local_world_size=int(environ.get("LOCAL_WORLD_SIZE", "1")),
            launched=True,
        )

    @property
    def distributed(self) -> bool:
        """Started by torchrun: a process group and DDP, even with one process."""
        return self.launched

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def pick_device(local_rank: int = 0) -> torch.device:
    """The GPU of this local rank when CUDA is usable, else the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device("cpu")


def backend_for(device: torch.device) -> str:
    return "nccl" if device.type == "cuda" else "gloo"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def threads_per_process(processes: int) -> int:
    """Intra-op threads so that ``processes`` workers share the cores without oversubscribing."""
    return max(1, usable_cores() // max(1, processes))


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)  # seeds CUDA too


def env_event(strategy: str, world_size: int, device: torch.device, **extra: Any) -> None:
    """The running torch's facts: the CUDA and cuDNN it was built with (None on a CPU build), whatever the device."""
    event_lines.emit(
        "env",
        python=platform.python_version(),
        torch=torch.__version__,
        cuda=torch.version.cuda,
        cudnn=cudnn_text(torch.backends.cudnn.version()),
        host=socket.gethostname(),
        git_commit=git_commit(Path(__file__).resolve().parent),
        strategy=strategy,
        world_size=world_size,
        device=str(device),
        **extra,
    )


# --- arguments --------------------------------------------------------------


def build_parser(module: ModuleType) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m training.workloads.{module.NAME}", description=module.__doc__)
    parser.add_argument("--epochs", type=int, help="passes over the training set (default %(default)s)")
    parser.add_argument("--batch-size", type=int, help="samples per step in each process")
    parser.add_argument("--lr", type=float, help="learning rate")
    parser.add_argument("--optimizer", choices=("sgd", "adam"), help="sgd (momentum 0.9) or adam")
    parser.add_argument(
        "--lr-schedule",
        choices=LR_SCHEDULES,
        default="cosine",
        help="constant, or cosine decay from --lr to 0 over the run (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for initialisation and shuffling")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads; 0 = cores / local processes")
    parser.add_argument(
        "--parallel",
        choices=parallel.MODES,
        default=parallel.default_mode(),
        help="under torchrun: DDP replicas or FSDP shards (default: FLEET_STRATEGY, else ddp)",
    )
    parser.add_argument(
        "--save",
        metavar="PATH",
        default=output_file("model.pt"),
        help="save the final model's state_dict here (rank 0; default: model.pt in FLEET_OUTPUT_DIR when set)",
    )
    parser.add_argument(
        "--metrics-csv",
        metavar="PATH",
        default=output_file("metrics.csv"),
        help="write every step's metrics here as CSV (rank 0; default: metrics.csv in FLEET_OUTPUT_DIR when set)",
    )
    parser.add_argument("--report-interval", type=float, default=0.25, help="seconds between progress events")
    parser.add_argument("--tiny", action="store_true", help="small, fast configuration (tests and smoke checks)")
    profiling.add_arguments(parser)
    module.add_arguments(parser)
    parser.set_defaults(**module.DEFAULTS)
    return parser


def parse_args(module: ModuleType, argv: list[str] | None = None) -> argparse.Namespace:
    """Parse a workload's arguments; ``--tiny`` swaps in its fast defaults, explicit flags still win."""
    parser = build_parser(module)
    args = parser.parse_args(argv)
    if args.tiny:
        parser.set_defaults(**module.TINY)
        args = parser.parse_args(argv)
    for name in ("epochs", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.lr <= 0:
        parser.error("--lr must be positive")
    profiling.check_arguments(parser, args)
    return args


def build_optimizer(params, args: argparse.Namespace) -> torch.optim.Optimizer:
    if args.optimizer == "adam":
        return torch.optim.Adam(params, lr=args.lr)
    return torch.optim.SGD(params, lr=args.lr, momentum=0.9)


def build_schedule(
    optimizer: torch.optim.Optimizer, args: argparse.Namespace, steps_per_epoch: int
) -> torch.optim.lr_scheduler.LRScheduler:
    """Per-step learning-rate schedule. Cosine decay ends the run at a small step size, so the
    final weights depend less on the noise of the last steps (Hogwild's interleaving on a loaded
    node). Digits, Hogwild(2), lr 0.003, load 14 on two cores, seeds 0-3: 10 epochs held 0.972-0.981
    constant and 0.975-0.981 cosine; 6 epochs 0.958-0.972 either way (and 0.936 seen once)."""
    total = max(1, args.epochs * steps_per_epoch)
    if args.lr_schedule == "cosine":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, partial(_cosine, total=total))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, _constant)


def _cosine(step: int, total: int) -> float:
    return 0.5 * (1.0 + math.cos(math.pi * min(step, total) / total))


def _constant(step: int) -> float:
    return 1.0


# --- training ---------------------------------------------------------------


class Throughput:
    """Samples per second over training time only (evaluation excluded).

    ``steady`` leaves out the first ``warmup_steps`` steps (allocator, caches,
    the first collective); ``window`` covers the time since it was last read.
    ``median_step`` is the rate of the median steady step: on a node shared
    with other work it shows what the loop does when it has its cores, where
    ``steady`` also counts the steps someone else's process slowed down.
    """

    def __init__(self, warmup_steps: int = WARMUP_STEPS) -> None:
        self.warmup_steps = warmup_steps
        self.steps = 0
        self.samples = 0
        self.seconds = 0.0
        self.steady_samples = 0
        self.steady_seconds = 0.0
        self.window_samples = 0
        self.window_seconds = 0.0
        self.step_rates: deque[float] = deque(maxlen=10_000)

    def add(self, samples: int, seconds: float) -> None:
        self.steps += 1
        self.samples += samples
        self.seconds += seconds
        self.window_samples += samples
        self.window_seconds += seconds
        if self.steps > self.warmup_steps:
            self.steady_samples += samples
            self.steady_seconds += seconds
            if seconds > 0:
                self.step_rates.append(samples / seconds)

    def window(self) -> float | None:
        rate = self.window_samples / self.window_seconds if self.window_seconds > 0 else None
        self.window_samples, self.window_seconds = 0, 0.0
        return rate

    def steady(self) -> float | None:
        if self.steady_seconds > 0:
            return self.steady_samples / self.steady_seconds
        return self.samples / self.seconds if self.seconds > 0 else None

    def median_step(self) -> float | None:
        return statistics.median(self.step_rates) if self.step_rates else None


class Trainer:
    """Trains a model on in-memory tensors, one sampler-ordered pass per epoch."""

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        train: TensorDataset,
        batch_size: int,
        sampler: DistributedSampler,
        device: torch.device,
        args: argparse.Namespace | None = None,
        profiler: profiling.StepProfiler | None = None,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        steps_per_epoch = math.ceil(len(sampler) / batch_size)
        self.schedule = build_schedule(optimizer, args, steps_per_epoch) if args is not None else None
        self.train = train
        self.batch_size = batch_size
        self.sampler = sampler
        self.device = device
        self.loss_fn = nn.CrossEntropyLoss()
        self.steps_per_epoch = steps_per_epoch
        self.step = 0
        self.profiler = profiler

    def train_epoch(self, epoch: int, on_step, skip: int = 0) -> None:
        """One pass over this process's share of the data; ``on_step(loss, samples, seconds)`` after each step.

        ``skip`` leaves out the epoch's first batches (those a resumed run's checkpoint already trained on):
        the sampler's order depends only on the seed and the epoch, so they are the same batches.
        """
        self.sampler.set_epoch(epoch)
        self.model.train()
        inputs, targets = self.train.tensors
        last = time.perf_counter()
        profiler = self.profiler
        batches = BatchSampler(self.sampler, self.batch_size, drop_last=False)
        for number, indices in enumerate(batches):
            if number < skip:
                continue
            with profiler.data_span() if profiler else profiling.NO_SPAN:
                x = inputs[indices].to(self.device, non_blocking=True)
                y = targets[indices].to(self.device, non_blocking=True)
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            if self.schedule is not None:
                self.schedule.step()
            if profiler:
                profiler.step()
            self.step += 1
            now = time.perf_counter()
            on_step(loss.item(), len(indices), now - last)
            last = now


@torch.no_grad()
def evaluate(
    model: nn.Module, test: TensorDataset, device: torch.device, batch_size: int = 1024
) -> tuple[float, float]:
    """Held-out (accuracy, mean loss)."""
    model.eval()
    inputs, targets = test.tensors
    correct, loss_sum = 0, 0.0
    for start in range(0, len(targets), batch_size):
        x = inputs[start : start + batch_size].to(device)
        y = targets[start : start + batch_size].to(device)
        logits = model(x)
        loss_sum += nn.functional.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(dim=1) == y).sum().item()
    return correct / len(targets), loss_sum / len(targets)


class Reporter:
    """Turns training steps into events; silent on ranks other than 0."""

    def __init__(self, enabled: bool, world_size: int, interval: float, csv_path: str | None = None) -> None:
        self.enabled = enabled
        self.steps = StepCSV(csv_path) if enabled and csv_path else None
        self.world_size = world_size
        self.throttle = event_lines.ProgressThrottle(interval)
        self.meter = Throughput()
        self.loss_sum = 0.0
        self.loss_count = 0
        self.accuracy: float | None = None
        self.test_loss: float | None = None
        self.stepped = False

    def step(self, step: int, epoch: int, loss: float, samples: int, seconds: float) -> None:
        self.meter.add(samples * self.world_size, seconds)
        self.loss_sum += loss
        self.loss_count += 1
        self.record(step, epoch, loss, samples * self.world_size / seconds if seconds > 0 else None)
        if not self.stepped and self.enabled:  # a resumed run's first step is not step 1
            event_lines.emit("first_step", ts=time.time())
        self.stepped = True
        if self.throttle.ready():
            self.progress(step, epoch)

    def record(self, step: int, epoch: int, loss: float | None, samples_per_s: float | None) -> None:
        """One row of the per-step CSV."""
        if self.steps is not None:
            self.steps.step(step, epoch, loss, samples_per_s)

    def progress(self, step: int, epoch: int) -> None:
        loss = self.loss_sum / self.loss_count if self.loss_count else None
        self.loss_sum, self.loss_count = 0.0, 0
        rate = self.meter.window()
        if self.enabled:
            event_lines.emit(
                "progress",
                step=step,
                epoch=epoch,
                loss=loss,
                accuracy=self.accuracy,
                samples_per_s=rate,
                ts=time.time(),
            )

    def epoch_end(self, step: int, epoch: int, epochs: int, accuracy: float, test_loss: float) -> None:
        self.accuracy, self.test_loss = accuracy, test_loss
        if self.steps is not None:
            self.steps.epoch_end(accuracy, test_loss)
        if self.enabled:
            print(
                f"epoch {epoch}/{epochs}: held-out accuracy {accuracy:.4f}, held-out loss {test_loss:.4f}", flush=True
            )
        if self.throttle.ready(force=epoch == epochs):
            self.progress(step, epoch)

    def done(self, step: int) -> None:
        if self.steps is not None:
            self.steps.close()
        if self.enabled:
            event_lines.emit(
                "done",
                accuracy=self.accuracy,
                loss=self.test_loss,
                samples_per_s=self.meter.steady(),
                median_step_samples_per_s=self.meter.median_step(),
                steps=step,
            )


def run(module: ModuleType, argv: list[str] | None = None) -> int:
    """The ``main`` of a training workload: one process, or one rank under torchrun."""
    return guarded(_run, module, argv)


def _run(module: ModuleType, argv: list[str] | None) -> int:
    install_signal_handlers()
    args = parse_args(module, argv)
    env = DistEnv.from_environ()
    device = start_process(env, args.threads)
    seed_everything(args.seed)
    strategy = args.parallel if env.distributed else "single"
    if env.is_main:
        env_event(strategy, env.world_size, device, **hyperparameters(module, args))

    train, test = module.load_data(args)
    model = module.build_model(args).to(device)
    trained = parallel.wrap(model, args.parallel, device) if env.distributed else model
    mode = args.parallel if env.distributed else "single"
    everyone = env.distributed and parallel.collective_forward(args.parallel)
    sampler = DistributedSampler(train, num_replicas=env.world_size, rank=env.rank, shuffle=True, seed=args.seed)
    optimizer = build_optimizer(trained.parameters(), args)
    profiler = profiling.profiler_for(args, env.rank, device)
    trainer = Trainer(trained, optimizer, train, args.batch_size, sampler, device, args, profiler)
    reporter = Reporter(env.is_main, env.world_size, args.report_interval, args.metrics_csv)
    watch = ParentWatch() if env.distributed else None
    saver = Saver(checkpoints.Checkpointer.from_environ(), trainer, model, mode, env)
    first_epoch, skip = saver.resume()

    def on_step(epoch: int, loss: float, samples: int, seconds: float) -> None:
        if watch:
            watch.check()
        reporter.step(trainer.step, epoch, loss, samples, seconds)
        saver.after_step()

    polite_stops(saver.checkpointer.enabled)
    for epoch in range(first_epoch, args.epochs + 1):
        trainer.train_epoch(epoch, partial(on_step, epoch), skip if epoch == first_epoch else 0)
        if profiler and not profiler.running:
            trainer.profiler = profiler = None
        # Under DDP the other ranks go on and wait in the next step's all-reduce; FSDP's forward is collective.
        if env.is_main or everyone:
            scores = evaluate(model, test, device)
            if env.is_main:
                reporter.epoch_end(trainer.step, epoch, args.epochs, *scores)
    polite_stops(False)
    saver.stop_if_asked()

    if profiler:
        profiler.close()
    if args.save and (env.is_main or everyone):
        state = parallel.full_state_dict(model, args.parallel if env.distributed else "ddp")
        if env.is_main:
            torch.save(state, args.save)
    if env.is_main:
        reporter.done(trainer.step)
    if env.distributed:
        # No rank tears the group down while another still has collectives in flight: after FSDP's
        # state-dict gather, a rank that left at once aborted ("terminate called without an active
        # exception") in 2 of 6 runs on two cores; with the barrier, none did.
        dist.barrier()
        dist.destroy_process_group()
        # Everything is written and reported. A rank could still abort in the interpreter's teardown
        # after that ("terminate called without an active exception" in 1 of 8 FSDP(2) runs on gloo,
        # after the final "done"), which failed a finished run; so a rank leaves without it.
        leave_without_teardown(0)
    return 0


class Saver:
    """A training loop's checkpoints: every N steps or M seconds, and once more when told to stop.

    Under torchrun the ranks agree every ``AGREE_STEPS`` steps (one small all-reduce) on whether to
    save and stop, since each receives the signal on its own and a time rule reads each rank's clock.
    """

    AGREE_STEPS = 10

    def __init__(self, checkpointer: checkpoints.Checkpointer, trainer: Trainer, model: nn.Module, mode: str, env):
        self.checkpointer = checkpointer
        self.trainer = trainer
        self.model = model
        self.mode = mode
        self.env = env

    def resume(self) -> tuple[int, int]:
        """Load FLEET_RESUME_DIR's checkpoint when given; returns (first epoch, batches of it to skip)."""
        resumed = resume_state(self.env.world_size)
        if resumed is None:
            return 1, 0
        path, state = resumed
        trainer = self.trainer
        step = checkpoints.restore(state, self.model, trainer.optimizer, trainer.schedule, self.mode)
        trainer.step = self.checkpointer.last_step = step
        if self.env.is_main:
            print(f"resumed from {path} at step {step}", flush=True)
        return step // trainer.steps_per_epoch + 1, step % trainer.steps_per_epoch

    def after_step(self) -> None:
        if not self.checkpointer.enabled:
            return
        step = self.trainer.step
        if self.env.distributed:
            if step % self.AGREE_STEPS:
                return
            stop, due = self.agree(stop_signal() is not None, self.checkpointer.due(step))
        else:
            stop, due = stop_signal() is not None, self.checkpointer.due(step)
        if stop or due:
            self.save("stop" if stop else "periodic")
        if stop:
            self.leave()

    def agree(self, stop: bool, due: bool) -> tuple[bool, bool]:
        flags = torch.tensor([int(stop), int(due and self.env.is_main)], dtype=torch.int32)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        return bool(flags[0]), bool(flags[1])

    def save(self, reason: str) -> None:
        if not (self.env.is_main or parallel.collective_forward(self.mode)):
            return
        trainer = self.trainer
        state = checkpoints.training_state(self.model, trainer.optimizer, trainer.schedule, trainer.step, self.mode)
        if self.env.is_main:
            state["world_size"] = self.env.world_size
            self.checkpointer.save(state, trainer.step, reason)

    def stop_if_asked(self) -> None:
        """A signal that came after the last step (during the last evaluation): the run is complete, so no save."""
        if stop_signal() is not None and self.checkpointer.enabled:
            self.leave()

    def leave(self) -> None:
        leave_stopped(self.trainer.step)


def resume_state(world_size: int, hogwild: bool = False) -> tuple[Path, dict[str, Any]] | None:
    """FLEET_RESUME_DIR's checkpoint with its path, or None for a fresh start; one saved by another number
    of processes (or by Hogwild for another strategy, and the reverse) is refused here (exit 2)."""
    path = checkpoints.resume_path()
    if path is None:
        return None
    state = checkpoints.load(path)
    try:
        checkpoints.check_fits(state, world_size, hogwild=hogwild)
    except checkpoints.DoesNotFit as refused:
        exit_now(2, f"cannot resume: {refused}")
    return path, state


def leave_stopped(step: int) -> None:
    """Exit as stopped by the signal received (SIGTERM when none was): code 128 + its number."""
    signum = stop_signal() or signal.SIGTERM
    exit_now(128 + signum, f"stopped by {signal.Signals(signum).name} at step {step}")


def start_process(env: DistEnv, threads: int) -> torch.device:
    """Threads, device and (under torchrun) the process group of this process."""
    device = pick_device(env.local_rank)
    threads = threads or threads_per_process(env.local_world_size)  # counted before pinning narrows it
    if env.distributed and device.type == "cpu":
        # Before the process group starts gloo's threads, so that they inherit it.
        cores = cpu_ddp.rank_cores(env.local_rank, env.local_world_size, sorted(os.sched_getaffinity(0)))
        if cores:
            cpu_ddp.pin_process(cores)
    torch.set_num_threads(threads)
    if env.distributed:
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group(backend_for(device), timeout=timedelta(minutes=10))
    return device


def hyperparameters(module: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "workload": module.NAME,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "optimizer": args.optimizer,
        "lr_schedule": args.lr_schedule,
        "seed": args.seed,
    }
