"""Hogwild: N worker processes train one model in shared memory without locks.

    python -m training.workloads.hogwild_supervisor --workload digits_cnn --workers 2 [workload args]

As in PyTorch's examples/mnist_hogwild: the ``spawn`` start method,
``model.share_memory()``, worker ``rank`` seeded ``seed + rank``. Each worker
trains on its own shard of every epoch (a DistributedSampler with the run's
seed), so one epoch is one pass over the training set, as in the other
strategies. The parent reports all events: aggregate samples/s over the
workers and held-out accuracy after each epoch, evaluated while the workers
wait at the epoch boundary. SIGTERM or SIGINT to the parent ends the workers
too; a worker whose parent has gone stops by itself.

Checkpoints (with FLEET_CHECKPOINT_DIR): the parent saves the shared model with every worker's
optimizer, schedule, RNG and place in its epoch (training/workloads/strategies/hogwild.py). It asks the
workers to pause (each answers after its current step with its own state and waits), saves, and lets
them go on, or on a stop signal ends them. The workers then ignore SIGTERM: the parent, which gets the
same signal, saves first and ends them.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import signal
import sys
import time
from multiprocessing.connection import Connection, wait

import torch
import torch.multiprocessing as mp
from torch.utils.data import DistributedSampler, TensorDataset

from training.strategies.hogwild import SUPERVISOR
from training.workloads import WORKLOADS, arguments, checkpoints, event_lines, strategies
from training.workloads.distributed import pick_device, seed_everything, threads_per_process
from training.workloads.optimizers import build_optimizer
from training.workloads.reporter import Reporter, Throughput, env_event
from training.workloads.run_env import RUN_ENV
from training.workloads.saver import resume_state
from training.workloads.stops import (
    ParentWatch,
    guarded,
    install_signal_handlers,
    leave_stopped,
    polite_stops,
    stop_signal,
)
from training.workloads.trainer import Trainer, evaluate

WORKER_REPORT_INTERVAL = 0.1  # seconds between a worker's reports to the parent
WORKER_STOP_TIMEOUT = 5.0
STRATEGY = strategies.get("hogwild")


def main(argv: list[str] | None = None) -> int:
    return guarded(_main, argv)


def _main(argv: list[str] | None) -> int:
    install_signal_handlers()
    parser = argparse.ArgumentParser(prog=f"python -m {SUPERVISOR}", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workload", required=True, choices=[n for n, w in WORKLOADS.items() if STRATEGY.name in w.strategies]
    )
    parser.add_argument("--workers", type=int, required=True, help="worker processes")
    ours, rest = parser.parse_known_args(argv)
    if ours.workers < 1:
        parser.error("--workers must be at least 1")
    module = importlib.import_module(WORKLOADS[ours.workload].module)
    args = arguments.parse_args(module, rest)
    return Supervisor(module, args, ours.workers).run()


class Supervisor:
    """The parent: starts the workers, relays their progress, evaluates, reports."""

    def __init__(self, module, args: argparse.Namespace, workers: int) -> None:
        self.module = module
        self.args = args
        self.workers = workers
        self.threads = args.threads or threads_per_process(workers)
        self.procs: list = []
        self.conns: list[Connection] = []
        self.checkpointer = checkpoints.Checkpointer.from_environ()

    def run(self) -> int:
        torch.set_num_threads(self.threads)
        seed_everything(self.args.seed)
        # Refused before any worker starts when another number of workers saved it.
        path, resumed = resume_state(self.workers, STRATEGY) or (None, None)
        self.device = pick_device(0)
        env_event(
            STRATEGY.name,
            self.workers,
            self.device,
            threads_per_worker=self.threads,
            **arguments.hyperparameters(self.module, self.args),
        )
        train, self.test = self.module.load_data(self.args)
        for tensor in train.tensors:
            tensor.share_memory_()
        self.model = self.module.build_model(self.args).to(self.device)
        self.step = 0
        if resumed is not None:
            self.step = self.checkpointer.last_step = STRATEGY.restore_supervisor(resumed, self.model)
            print(f"resumed from {path} at step {self.step}", flush=True)
        self.model = STRATEGY.wrap(self.model, self.device)
        try:
            self._start_workers(train, resumed["workers"] if resumed is not None else [None] * self.workers)
            polite_stops(self.checkpointer.enabled)
            return self._supervise()
        finally:
            self._stop_workers()

    def _start_workers(self, train: TensorDataset, starts: list[dict | None]) -> None:
        # Spawned workers import torch afresh and inherit this environment.
        for key, value in RUN_ENV.items():
            os.environ.setdefault(key, value)
        ctx = mp.get_context("spawn")
        for rank in range(self.workers):
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(
                target=_worker,
                args=(rank, self.workers, self.args, self.model, train, child_end),
                kwargs={
                    "threads": self.threads,
                    "device": str(self.device),
                    "start": starts[rank],
                    "polite": self.checkpointer.enabled,
                },
                name=f"hogwild-{rank}",
                daemon=True,
            )
            proc.start()
            child_end.close()
            self.procs.append(proc)
            self.conns.append(parent_end)

    def _supervise(self) -> int:
        self.reporter = Reporter(True, 1, self.args.report_interval, self.args.metrics_csv)
        self.stepped = False
        self.ended: dict[int, int] = {}  # epoch -> workers that finished it
        self.evaluated = 0  # the last epoch evaluated
        self.pausing: str | None = None  # why the workers were asked to pause: "periodic" or "stop"
        self.states: dict[int, dict] = {}  # rank -> its state, while pausing
        self.held_epoch: int | None = None  # an epoch every worker ended while they were pausing
        self.rates: dict[int, tuple] = {}  # rank -> (steady, median-step) samples/s
        self.accuracy = self.test_loss = None
        self.live = set(range(self.workers))
        while self.live:
            ready = set(wait([self.conns[r] for r in self.live] + [self.procs[r].sentinel for r in self.live], 1.0))
            for rank in sorted(self.live):
                while rank in self.live and ready & {self.conns[rank], self.procs[rank].sentinel}:
                    message = self._receive(rank)
                    if message is None:
                        break
                    getattr(self, f"_on_{message[0]}")(rank, *message[1:])
            self._checkpoint_if_due()
        return self._finish()

    def _checkpoint_if_due(self) -> None:
        if not self.checkpointer.enabled or self.pausing:
            return
        stop = stop_signal() is not None
        if self.evaluated == self.args.epochs:  # the workers are saying "done": none would answer a pause
            if stop:
                self._leave()  # the run is complete: nothing to save
            return
        if stop or self.checkpointer.due(self.step):
            self.pausing, self.states = ("stop" if stop else "periodic"), {}
            for rank in self.live:
                self.conns[rank].send(("pause",))

    def _on_state(self, rank, state: bytes) -> None:
        self.states[rank] = torch.load(io.BytesIO(state), weights_only=False)
        if len(self.states) < self.workers:
            return
        workers = [self.states[rank] for rank in range(self.workers)]
        self.checkpointer.save(STRATEGY.supervisor_state(self.model, workers, self.step), self.step, self.pausing)
        self.states = {}
        if self.pausing == "stop":
            for conn in self.conns:
                conn.send(("stop",))
            self._leave()
        self.pausing = None
        for conn in self.conns:
            conn.send(("resume",))
        if self.held_epoch is not None:
            epoch, self.held_epoch = self.held_epoch, None
            self._evaluate(epoch)

    def _leave(self) -> None:
        self._stop_workers()
        leave_stopped(self.step)

    def _on_step(self, rank, epoch, steps, samples, seconds, loss_sum, first_ts) -> None:
        if first_ts is not None and not self.stepped:  # a resumed run's first step is not step 1
            event_lines.emit("first_step", ts=first_ts)
        self.stepped = True
        self.step += steps
        # The workers run side by side: their samples over one worker's time.
        self.reporter.meter.add(samples, seconds / self.workers)
        self.reporter.loss_sum += loss_sum
        self.reporter.record(
            self.step,
            epoch,
            loss_sum / steps if steps else None,
            samples * self.workers / seconds if seconds > 0 else None,
        )
        self.reporter.loss_count += steps
        if self.reporter.throttle.ready():
            self.reporter.progress(self.step, epoch)

    def _on_epoch_end(self, rank, epoch) -> None:
        self.ended[epoch] = self.ended.get(epoch, 0) + 1
        if self.ended[epoch] < self.workers:
            return
        if self.pausing:  # the workers answer the pause first; a stop leaves this epoch to the resumed run
            self.held_epoch = epoch
            return
        self._evaluate(epoch)

    def _evaluate(self, epoch: int) -> None:
        self.evaluated = epoch
        self.accuracy, self.test_loss = evaluate(self.model, self.test, self.device)
        self.reporter.epoch_end(self.step, epoch, self.args.epochs, self.accuracy, self.test_loss)
        for conn in self.conns:
            conn.send(("continue",))

    def _on_done(self, rank, steady, median_step) -> None:
        self.rates[rank] = (steady, median_step)
        self.live.discard(rank)

    def _finish(self) -> int:
        for proc in self.procs:
            proc.join(WORKER_STOP_TIMEOUT)
        if self.args.save:
            torch.save(self.model.state_dict(), self.args.save)
        if self.reporter.steps is not None:
            self.reporter.steps.close()
        event_lines.emit(
            "done",
            accuracy=self.accuracy,
            loss=self.test_loss,
            samples_per_s=sum(steady or 0 for steady, _ in self.rates.values()) or None,
            median_step_samples_per_s=sum(median or 0 for _, median in self.rates.values()) or None,
            steps=self.step,
        )
        return 0

    def _receive(self, rank: int) -> tuple | None:
        """The worker's next message; None when it has none waiting. A worker
        that closed its pipe before saying "done" has died."""
        conn = self.conns[rank]
        if not conn.poll():
            return None
        try:
            return conn.recv()
        except EOFError:
            self.procs[rank].join(WORKER_STOP_TIMEOUT)
            raise RuntimeError(f"hogwild worker {rank} exited with code {self.procs[rank].exitcode}") from None

    def _stop_workers(self) -> None:
        for proc in self.procs:
            if proc.is_alive():
                proc.kill() if self.checkpointer.enabled else proc.terminate()  # they ignore SIGTERM then
        deadline = time.monotonic() + WORKER_STOP_TIMEOUT
        for proc in self.procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join()


def _worker(
    rank: int,
    world: int,
    args: argparse.Namespace,
    model: torch.nn.Module,
    train: TensorDataset,
    conn: Connection,
    threads: int,
    device: str,
    start: dict | None = None,
    polite: bool = False,
) -> None:
    # The parent owns Ctrl-C and SIGTERM handling and ends the workers itself; a worker just dies on
    # SIGTERM (the default action), unless the parent saves checkpoints: it then asks for the state first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if polite:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    torch.set_num_threads(threads)
    seed_everything(args.seed + rank)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    trainer = Trainer(
        model,
        build_optimizer(model.parameters(), args),
        train,
        args.batch_size,
        sampler,
        torch.device(device),
        args,
    )
    first_epoch, skip = 1, 0
    if start is not None:
        first_epoch, skip = STRATEGY.restore_worker(start, trainer)
    meter = Throughput()
    report = _WorkerReport(conn, trainer)
    for epoch in range(first_epoch, args.epochs + 1):
        report.epoch_start(epoch, skip if epoch == first_epoch else 0)

        def on_step(loss: float, samples: int, seconds: float) -> None:
            meter.add(samples, seconds)
            report.step(epoch, loss, samples, seconds)  # noqa: B023
            if conn.poll():  # the parent asks for a pause: it saves a checkpoint
                report.pause(conn.recv())

        trainer.train_epoch(epoch, on_step, skip if epoch == first_epoch else 0)
        report.flush(epoch)
        conn.send(("epoch_end", epoch))
        while (message := report.wait_for_parent())[0] != "continue":
            report.pause(message)
    conn.send(("done", meter.steady(), meter.median_step()))
    conn.close()


class _WorkerReport:
    """Batches a worker's step counts into a few messages a second."""

    def __init__(self, conn: Connection, trainer: Trainer) -> None:
        self.conn = conn
        self.trainer = trainer
        self.epoch = 1
        self.epoch_began = 0  # the worker's step count at the start of its current epoch
        self.watch = ParentWatch()
        self.first_ts: float | None = None
        self.sent_first = False
        self.last = time.monotonic()
        self.steps = self.samples = 0
        self.seconds = self.loss_sum = 0.0

    def step(self, epoch: int, loss: float, samples: int, seconds: float) -> None:
        self.watch.check()
        if self.first_ts is None:
            self.first_ts = time.time()
        self.steps += 1
        self.samples += samples
        self.seconds += seconds
        self.loss_sum += loss
        if not self.sent_first or time.monotonic() - self.last >= WORKER_REPORT_INTERVAL:
            self.flush(epoch)

    def flush(self, epoch: int) -> None:
        if self.steps:
            first = None if self.sent_first else self.first_ts
            self.conn.send(("step", epoch, self.steps, self.samples, self.seconds, self.loss_sum, first))
            self.sent_first = True
        self.last = time.monotonic()
        self.steps = self.samples = 0
        self.seconds = self.loss_sum = 0.0

    def epoch_start(self, epoch: int, skip: int) -> None:
        self.epoch, self.epoch_began = epoch, self.trainer.step - skip

    def pause(self, message: tuple) -> None:
        """Answer the parent's ("pause",) with this worker's state, then wait: go on, or stop here."""
        assert message[0] == "pause", message
        self.flush(self.epoch)
        done = self.trainer.step - self.epoch_began  # batches of the epoch trained (all of them at its end)
        state = STRATEGY.worker_state(self.trainer, self.epoch, done)
        buffer = io.BytesIO()
        torch.save(state, buffer)  # a copy: the worker's own tensors go on changing after the pause
        self.conn.send(("state", buffer.getvalue()))
        if self.wait_for_parent()[0] == "stop":
            self.conn.close()
            sys.exit(0)

    def wait_for_parent(self) -> tuple:
        while not self.conn.poll(1.0):
            self.watch.check()
        return self.conn.recv()


if __name__ == "__main__":
    sys.exit(main())
