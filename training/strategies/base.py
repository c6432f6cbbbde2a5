"""What every training strategy answers: how its processes are laid out, checked and started.

Pure Python: no torch, no Django. A strategy is asked, never branched on by name.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class NodeShare:
    """One node's part of a run, as a strategy needs it to build that node's command line."""

    processes: int  # per node
    args: list[str] = field(default_factory=list)  # the workload's or script's flags
    module: str = ""  # a built-in workload's module (python -m)
    script: str = ""  # or a user script's absolute path
    workload: str = ""  # the built-in workload's name, "" for a script
    node_rank: int = 0
    node_count: int = 1
    rendezvous: str = ""  # host:port on node 0, for runs over several nodes
    rendezvous_id: str = ""
    rendezvous_timeout_s: int = 300
    local_addr: str = ""  # the address other nodes reach this one on, for runs over several nodes
    # A command run's (workload "command"): its argument list, a first word ``python`` already the environment's
    # interpreter, whether it was one, and the environment's torchrun.
    command: list[str] = field(default_factory=list)
    python_program: bool = False
    torchrun: list[str] = field(default_factory=list)
    gpus: int = 0  # this node's GPUs
    node_addrs: list[str] = field(default_factory=list)  # every node's address, in rank order

    def program(self) -> list[str]:
        """How the plain program starts: ``python SCRIPT`` or ``python -m MODULE``."""
        return [self.script] if self.script else ["-m", self.module]


class Strategy:
    """One way to run training processes; subclasses set the facts and build the command."""

    name: str  # stored on the run
    label: str  # shown in forms and on run pages
    short: str  # in sentences: "choose DDP for more"
    spans_nodes = False  # may a run of it cover several nodes
    one_gpu = False  # uses at most one GPU per node
    process_per_gpu = False  # starts one process per GPU unless told otherwise
    shares_device = False  # its processes share one device, so cores, not GPUs, bound how many there are
    single_process = False  # exactly one process per node
    runs_scripts = True  # may a user script run under it
    runs_workloads = True  # may the built-in workloads run under it
    runs_commands = True  # may a researcher's own command run under it
    exports_rendezvous = False  # the command starts its own processes and gets the nodes' addresses instead
    profiles = True  # can the profiler follow its training loop (training/profiling/options.py)
    hint = ""  # one line for the launch form: when to pick it

    def default_processes(self, gpus: int) -> int:
        """Processes per node when the researcher leaves the field empty; ``gpus`` per node."""
        return gpus if self.process_per_gpu and gpus else 1

    def process_devices(self, gpus: int) -> int:
        """The devices that bound processes per node: its GPUs, or 0 for the node's CPU cores."""
        return 0 if self.shares_device else gpus

    def check(self, clean: dict, errors: dict[str, str], allowed: list[Strategy]) -> None:
        """Add a message by field for launch values this strategy refuses; ``allowed`` are the strategies
        the program runs as, named in the message as the way out."""
        if self.single_process and clean.get("processes", 1) > 1:
            more = either(s for s in allowed if not s.single_process)
            errors.setdefault("processes", f"A {self.short} run has exactly 1 process; choose {more} for more.")
        if clean.get("nodes", 1) > 1 and not self.spans_nodes:
            errors.setdefault("nodes", f"Only {either(s for s in allowed if s.spans_nodes)} runs span several nodes.")

    def check_gpus(self, gpus_per_node: int, allowed: list[Strategy]) -> str | None:
        """Why this strategy cannot use that many GPUs on a node, or None."""
        if self.one_gpu and gpus_per_node > 1:
            return f"A {self.short} run uses one GPU; choose one, or {either(s for s in allowed if not s.one_gpu)}."
        return None

    def check_script(self, path: str) -> str | None:
        """Why the user script at ``path`` cannot run under this strategy, or None."""
        return None

    def command(self, share: NodeShare) -> list[str]:
        """The argument list (never a shell string) that starts this node's share; a command run's as it is."""
        if share.command:
            return list(share.command)
        return [sys.executable, *share.program(), *share.args]

    def command_env(self, share: NodeShare) -> dict[str, str]:
        """Variables a command run's processes get from this strategy (they win over the run's own)."""
        return {}

    def __str__(self) -> str:
        return self.name


def either(strategies: Iterable[Strategy]) -> str:
    """Short names as one alternative: "DDP", "DDP or Hogwild", "DDP, Hogwild or FSDP"."""
    names = [s.short for s in strategies]
    if not names:
        return "another strategy"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
