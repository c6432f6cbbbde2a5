"""The argument list (never a shell string) a node worker runs for its share of a run."""

import sys

from django.conf import settings

from training import environments, strategies
from training.models import COMMAND, SCRIPT, Run, RunNode
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


def node_share(run: Run, part: RunNode, node_count: int, node_addrs: list[str] | None = None) -> NodeShare:
    """Node ``part`` of ``run`` as its strategy needs it; ``node_addrs``: every node's address, in rank order."""
    if run.workload == COMMAND:
        return command_share(run, part, node_count, node_addrs or [])
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


def command_share(run: Run, part: RunNode, node_count: int, node_addrs: list[str]) -> NodeShare:
    """A command run's node share: its program in its environment, where the other nodes are."""
    environment = environments.get(run.env_kind)
    return NodeShare(
        processes=run.processes,
        node_rank=part.rank,
        node_count=node_count,
        rendezvous=run.rendezvous,
        rendezvous_id=rendezvous_id(run),
        rendezvous_timeout_s=int(settings.RUN_RENDEZVOUS_TIMEOUT_S),
        local_addr=settings.RUN_RENDEZVOUS_HOST,
        command=program(run),
        python_program=bool(run.command) and run.command[0] == "python",
        torchrun=environment.torchrun(run.env_ref),
        gpus=len(part.gpu_indexes),
        node_addrs=node_addrs,
    )


def program(run: Run) -> list[str]:
    """The command as the run asked for it: a first word ``python`` is its environment's interpreter, and a
    shell line runs as ``bash -lc LINE`` (the line one argument, never interpolated)."""
    if run.shell_line:
        return ["bash", "-lc", run.shell_line]
    if run.command and run.command[0] == "python":
        return [environments.get(run.env_kind).python(run.env_ref), *run.command[1:]]
    return list(run.command)


def setup_argv(run: Run) -> list[str]:
    """The setup step, run before the command in the same environment and directory."""
    return ["bash", "-lc", run.setup]


def node_argv(run: Run, part: RunNode, node_count: int, node_addrs: list[str] | None = None) -> list[str]:
    """What node ``part`` of ``run`` starts: the workload, script or command under the run's strategy.

    Strategies start Python as the interpreter they run in; a node may give runs another (RUN_PYTHON).
    """
    argv = strategies.get(run.strategy).command(node_share(run, part, node_count, node_addrs))
    if run.workload != COMMAND and argv and argv[0] == sys.executable:
        argv = [settings.RUN_PYTHON, *argv[1:]]
    return argv


def strategy_env(run: Run, part: RunNode, node_count: int, node_addrs: list[str] | None = None) -> dict[str, str]:
    """What the run's strategy tells a command run's processes (FLEET_WORKERS, the nodes' addresses …)."""
    if run.workload != COMMAND:
        return {}
    return strategies.get(run.strategy).command_env(node_share(run, part, node_count, node_addrs))
