"""Hogwild: worker processes train one model in shared memory on one device, without locks.

A researcher's own command runs once with FLEET_WORKERS set to the processes asked for; it starts them.

The supervisor that starts and watches the workers is torch code and lives beside the workloads
(training.workloads.hogwild_supervisor), its shared model and checkpoints are its torch side's
(training/workloads/strategies/hogwild.py); this module only builds its command line.
"""

from __future__ import annotations

import sys

from training.strategies.base import NodeShare, Strategy

SUPERVISOR = "training.workloads.hogwild_supervisor"


class Hogwild(Strategy):
    name = "hogwild"
    label = "Hogwild"
    short = "Hogwild"
    one_gpu = True
    shares_device = True
    runs_scripts = False
    profiles = False  # its workers train in separate processes the supervisor does not profile

    def command(self, share: NodeShare) -> list[str]:
        if share.command:
            return list(share.command)
        return hogwild_argv(share.workload, share.processes, share.args)

    def command_env(self, share: NodeShare) -> dict[str, str]:
        return {"FLEET_WORKERS": str(share.processes)}


def hogwild_argv(workload: str, workers: int, script_args: list[str] | None = None) -> list[str]:
    """The argument list that starts a Hogwild run (never a shell string)."""
    return [sys.executable, "-m", SUPERVISOR, "--workload", workload, "--workers", str(workers), *(script_args or [])]
