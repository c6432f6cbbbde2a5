"""The built-in workloads a run can start, listed for the run form.

Pure Python: importing this registry pulls in neither torch nor Django.
"""

from __future__ import annotations

from dataclasses import dataclass

# The server's registry, by its functions: the name ``strategies`` here is the torch side's folder.
from training.strategies import get as server_strategy
from training.strategies import names as strategy_names

# The built-in workloads run under every strategy that runs them (not "launcher": a command's own launcher).
ALL_STRATEGIES = tuple(name for name in strategy_names() if server_strategy(name).runs_workloads)

# Sizes of the training splits, needed by the run form to bound the batch size
# without loading any data. tests/training/workloads checks them against the real splits.
DIGITS_TRAIN_SIZE = 1438
SYNTHETIC_TRAIN_SIZE = 8192


# What a run's page shows and charts: progress fields of training/node/stream.py.
TRAINING_MEASURES = ("loss", "accuracy", "samples_per_s")


@dataclass(frozen=True)
class Workload:
    """A runnable training program: ``python -m <module>`` or under a launcher."""

    module: str
    description: str
    strategies: tuple[str, ...]
    train_size: int | None  # None when the workload has no training set
    params: tuple[str, ...]  # hyperparameters the run form may set
    defaults: dict[str, object]  # their values when the form leaves them out
    records_health: bool = False  # a finished run stores a health record per GPU (monitoring/health/)
    measures: tuple[str, ...] = TRAINING_MEASURES
    profiler: str | None = None  # "torch" (steps of its training loop), "cprofile" (the whole program) or None


TRAINING_PARAMS = ("epochs", "batch_size", "lr", "optimizer", "seed")

WORKLOADS: dict[str, Workload] = {
    "digits_cnn": Workload(
        module="training.workloads.digits_cnn",
        description="Small CNN on scikit-learn's 8x8 digits; reports held-out accuracy each epoch.",
        strategies=ALL_STRATEGIES,
        train_size=DIGITS_TRAIN_SIZE,
        params=TRAINING_PARAMS,
        defaults={"epochs": 30, "batch_size": 32, "lr": 0.002, "optimizer": "adam", "seed": 0},
        profiler="torch",
    ),
    "synthetic": Workload(
        module="training.workloads.synthetic",
        description="MLP on generated data, for measuring training throughput.",
        strategies=ALL_STRATEGIES,
        train_size=SYNTHETIC_TRAIN_SIZE,
        params=TRAINING_PARAMS,
        defaults={"epochs": 10, "batch_size": 64, "lr": 0.001, "optimizer": "adam", "seed": 0},
        profiler="torch",
    ),
    "burnin": Workload(
        module="training.workloads.burnin",
        description="Burn-in health check: repeated matrix multiplies checked against a reference; reports GFLOP/s.",
        strategies=("single", "ddp"),
        train_size=None,
        params=("size", "iterations", "seed"),
        defaults={"size": 0, "iterations": 50, "seed": 0},
        records_health=True,
        measures=("gflops",),
    ),
}


# A user script (workload "script") takes the training flags, under the strategies that can start a plain program.
def measures(workload: str) -> tuple[str, ...]:
    """The progress fields a run of this workload reports (a script's: the training ones)."""
    spec = WORKLOADS.get(workload)
    return spec.measures if spec else TRAINING_MEASURES


SCRIPT_SPEC = Workload(
    module="",
    description="A user script: python SCRIPT --epochs … --batch-size … --lr … --optimizer … --seed …",
    strategies=tuple(name for name in strategy_names() if server_strategy(name).runs_scripts),
    train_size=None,
    params=TRAINING_PARAMS,
    defaults={"epochs": 10, "batch_size": 32, "lr": 0.001, "optimizer": "adam", "seed": 0},
    profiler="cprofile",
)

# The researcher's own command (workload "command"): no hyperparameter flags are added; every strategy that
# can start a plain program may run it (training/launching/commands.py checks the command itself).
COMMAND_SPEC = Workload(
    module="",
    description="Your own command: an argument list or a shell line, in the environment you choose.",
    strategies=tuple(name for name in strategy_names() if server_strategy(name).runs_commands),
    train_size=None,
    params=(),
    defaults={},
)


def spec_of(workload: str) -> Workload:
    """The spec a launch checks against: a built-in workload's, a script's or a command's (KeyError: unknown)."""
    if workload == "script":
        return SCRIPT_SPEC
    if workload == "command":
        return COMMAND_SPEC
    return WORKLOADS[workload]
