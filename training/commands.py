"""The argument list (never a shell string) a node worker runs for its share of a run."""

import sys

from django.conf import settings

from fleet.choices import RunStrategy
from training.launchers.ddp import torchrun_argv
from training.models import SCRIPT, Run, RunNode
from training.workloads import WORKLOADS

# Placeholder module name swapped for a script path: torchrun runs a file when no --module is given.
_SCRIPT_PLACEHOLDER = "fleet-user-script"


def script_args(hyperparameters: dict) -> list[str]:
    """Hyperparameters as the flags every workload (and user script) takes: --batch-size 32 …"""
    args = []
    for name, value in hyperparameters.items():
        args += [f"--{name.replace('_', '-')}", str(value)]
    return args


def rendezvous_id(run: Run) -> str:
    return f"fleet-run-{run.pk}"


def node_argv(run: Run, part: RunNode, node_count: int) -> list[str]:
    """What node ``part`` of ``run`` starts: the workload or script under the run's strategy."""
    args = script_args(run.hyperparameters)
    if run.strategy == RunStrategy.HOGWILD:
        # Imported here: the launcher's module imports torch, which the web app has no need of.
        from training.launchers.hogwild import hogwild_argv

        return hogwild_argv(run.workload, run.processes, args)
    if run.strategy == RunStrategy.DDP:
        return _torchrun(run, part, node_count, args)
    if run.workload == SCRIPT:
        return [sys.executable, run.script, *args]
    return [sys.executable, "-m", WORKLOADS[run.workload].module, *args]


def _torchrun(run: Run, part: RunNode, node_count: int, args: list[str]) -> list[str]:
    module = _SCRIPT_PLACEHOLDER if run.workload == SCRIPT else WORKLOADS[run.workload].module
    multi = node_count > 1
    argv = torchrun_argv(
        module,
        run.processes,
        nnodes=node_count,
        node_rank=part.rank,
        rdzv_endpoint=run.rendezvous if multi else None,
        rdzv_id=rendezvous_id(run) if multi else None,
        script_args=args,
    )
    if multi:
        # Node 0 gives up on a node that never joins instead of waiting torchrun's default 10 minutes.
        at = argv.index("--rdzv-conf") + 1
        argv[at] += f",join_timeout={int(settings.RUN_RENDEZVOUS_TIMEOUT_S)}"
    if run.workload == SCRIPT:
        at = argv.index("--module")
        argv[at : at + 2] = [run.script]
    return argv
