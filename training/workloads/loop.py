"""The training loop of a built-in workload: ``run(module, argv)``, in one process or as one rank of torchrun.

A workload module provides ``NAME``, ``DEFAULTS``, ``TINY`` (a fast configuration for tests),
``add_arguments(parser)``, ``load_data(args)`` and ``build_model(args)``; the loop trains it under the
run's strategy (training/workloads/strategies/), which wraps the model and saves its checkpoints.
The Hogwild supervisor (training/workloads/hogwild_supervisor.py) reuses the same pieces in its worker processes.
"""

from __future__ import annotations

from functools import partial
from types import ModuleType

import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

from training.workloads import arguments, checkpoints, profiling, strategies
from training.workloads.distributed import DistEnv, seed_everything, start_process
from training.workloads.optimizers import build_optimizer
from training.workloads.reporter import Reporter, env_event
from training.workloads.saver import Saver
from training.workloads.stops import ParentWatch, guarded, install_signal_handlers, leave_without_teardown, polite_stops
from training.workloads.trainer import Trainer, evaluate


def run(module: ModuleType, argv: list[str] | None = None) -> int:
    """The ``main`` of a training workload: one process, or one rank under torchrun."""
    return guarded(_run, module, argv)


def _run(module: ModuleType, argv: list[str] | None) -> int:
    install_signal_handlers()
    args = arguments.parse_args(module, argv)
    env = DistEnv.from_environ()
    device = start_process(env, args.threads)
    seed_everything(args.seed)
    strategy = strategies.get(args.strategy if env.distributed else "single")
    if env.is_main:
        env_event(strategy.name, env.world_size, device, **arguments.hyperparameters(module, args))

    train, test = module.load_data(args)
    model = module.build_model(args).to(device)
    trained = strategy.wrap(model, device)
    everyone = strategy.collective_forward
    sampler = DistributedSampler(train, num_replicas=env.world_size, rank=env.rank, shuffle=True, seed=args.seed)
    optimizer = build_optimizer(trained.parameters(), args)
    profiler = profiling.profiler_for(args, env.rank, device)
    trainer = Trainer(trained, optimizer, train, args.batch_size, sampler, device, args, profiler)
    reporter = Reporter(env.is_main, env.world_size, args.report_interval, args.metrics_csv)
    watch = ParentWatch() if env.distributed else None
    saver = Saver(checkpoints.Checkpointer.from_environ(), trainer, model, strategy, env)
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
        state = strategy.model_state(model)
        if env.is_main:
            torch.save(state, args.save)
    if env.is_main:
        reporter.done(trainer.step)
    if env.distributed:
        leave_group()
    return 0


def leave_group() -> None:
    """Leave the process group once every rank is done with it, then the process without its teardown."""
    # No rank tears the group down while another still has collectives in flight: after FSDP's
    # state-dict gather, a rank that left at once aborted ("terminate called without an active
    # exception") in 2 of 6 runs on two cores; with the barrier, none did.
    dist.barrier()
    dist.destroy_process_group()
    # Everything is written and reported. A rank could still abort in the interpreter's teardown
    # after that ("terminate called without an active exception" in 1 of 8 FSDP(2) runs on gloo,
    # after the final "done"), which failed a finished run; so a rank leaves without it.
    leave_without_teardown(0)
