"""A built-in workload's command line: the flags every workload takes, its own, and their checks.

The hyperparameters' ranges are the run form's and the API's (training/workloads/hyperparams.py), so a
value the fleet refuses at launch is refused here too, in the same words.
"""

from __future__ import annotations

import argparse
import os
from types import ModuleType
from typing import Any

from training.workloads import hyperparams, profiling, strategies
from training.workloads.optimizers import LR_SCHEDULES
from training.workloads.step_csv import output_file

CHECKED = ("epochs", "batch_size", "lr", "seed")


def default_strategy() -> str:
    """The strategy under torchrun when no flag names one: FLEET_STRATEGY (set by the node worker), else ddp."""
    name = os.environ.get("FLEET_STRATEGY", "")
    return name if name in strategies.under_torchrun() else "ddp"


def build_parser(module: ModuleType) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m training.workloads.{module.NAME}", description=module.__doc__)
    parser.add_argument("--epochs", type=int, help="passes over the training set (default %(default)s)")
    parser.add_argument("--batch-size", type=int, help="samples per step in each process")
    parser.add_argument("--lr", type=float, help="learning rate")
    parser.add_argument("--optimizer", choices=hyperparams.OPTIMIZERS, help="sgd (momentum 0.9) or adam")
    parser.add_argument(
        "--lr-schedule",
        choices=LR_SCHEDULES,
        default="cosine",
        help="constant, or cosine decay from --lr to 0 over the run (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for initialisation and shuffling")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads; 0 = cores / local processes")
    parser.add_argument(
        "--strategy",
        choices=strategies.under_torchrun(),
        default=default_strategy(),
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
    check_ranges(parser, args, CHECKED)
    profiling.check_arguments(parser, args)
    return args


def check_ranges(parser: argparse.ArgumentParser, args: argparse.Namespace, names: tuple[str, ...]) -> None:
    """Refuse a hyperparameter outside its range, defaults included, as the launch checks word it."""
    for name in names:
        try:
            hyperparams.CHECKS[name](getattr(args, name))
        except ValueError as error:
            parser.error(f"--{name.replace('_', '-')}: {error}")


def hyperparameters(module: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    """The values the environment event reports, for the run's record."""
    return {
        "workload": module.NAME,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "optimizer": args.optimizer,
        "lr_schedule": args.lr_schedule,
        "seed": args.seed,
    }
