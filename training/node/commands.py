"""The argument list (never a shell string) a node worker runs for its share of a run."""

import sys

from django.conf import settings

from training import strategies
from training.models import SCRIPT, Run, RunNode
from training.profiling import options as profile_options
from training.strategies import NodeShare
from training.workloads import WORKLOADS


def script_args(hyperparameters: dict) -> list[str]:
    """Hyperparameters as the flags every workload (and user script) takes: --batch-size 32 …"""
    args = []
    for name, value in hyperparameters.items():
        args += [f"--{name.replace('_', '-')}", str(value)]
    return args


def rendezvous_id(run: Run) -> str:
    return f"fleet-run-{run.pk}"


def node_share(run: Run, part: RunNode, node_count: int) -> NodeShare:
    """Node ``part`` of ``run`` as its strategy needs it."""
    script = run.workload == SCRIPT
    args = script_args(run.hyperparameters) + profile_options.workload_flags(run.profiler)
    module, path = ("", run.script) if script else (WORKLOADS[run.workload].module, "")
    if script and run.profiler.get("kind") == "cprofile":
        # The script runs inside the cProfile wrapper, as a module under every strategy that runs scripts.
        module, path = profile_options.CPROFILE_RUNNER, ""
        args = [*profile_options.cprofile_prefix(run.profiler), run.script, *args]
    return NodeShare(
        processes=run.processes,
        args=args,
        module=module,
        script=path,
        workload="" if script else run.workload,
        node_rank=part.rank,
        node_count=node_count,
        rendezvous=run.rendezvous,
        rendezvous_id=rendezvous_id(run),
        rendezvous_timeout_s=int(settings.RUN_RENDEZVOUS_TIMEOUT_S),
        local_addr=settings.RUN_RENDEZVOUS_HOST,
    )


def node_argv(run: Run, part: RunNode, node_count: int) -> list[str]:
    """What node ``part`` of ``run`` starts: the workload or script under the run's strategy.

    Strategies start Python as the interpreter they run in; a node may give runs another (RUN_PYTHON).
    """
    argv = strategies.get(run.strategy).command(node_share(run, part, node_count))
    if argv and argv[0] == sys.executable:
        argv = [settings.RUN_PYTHON, *argv[1:]]
    return argv
