"""FSDP: torchrun starts one process per device, as for DDP, and each process holds a shard of the model.

``torch.distributed.fsdp.fully_shard`` (FSDP2) shards every layer with parameters, then the whole
model: a rank keeps 1/N of the parameters, gradients and optimizer state, and gathers a layer's
full parameters only while it runs. Pick it over DDP when the model (with its optimizer state)
does not fit in one GPU's memory; otherwise DDP is faster (it moves each gradient once, FSDP
gathers the parameters in the forward and backward passes and reduce-scatters the gradients).

A user script runs under FSDP only when it says it can: a top-level ``FLEET_STRATEGIES`` list
naming "fsdp" (read without running the script). It learns the strategy from ``FLEET_STRATEGY``.
The built-in workloads shard in their torch side (training/workloads/strategies/fsdp.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

from training.strategies.base import NodeShare
from training.strategies.ddp import DDP

DECLARATION = "FLEET_STRATEGIES"
WORKLOAD_FLAG = ("--strategy", "fsdp")


class FSDP(DDP):
    name = "fsdp"
    label = "FSDP (torchrun, sharded)"
    short = "FSDP"
    hint = (
        "shards parameters, gradients and optimizer state over the processes; "
        "pick it when the model is too big for one GPU's memory."
    )

    def command(self, share: NodeShare) -> list[str]:
        argv = super().command(share)
        return [*argv, *WORKLOAD_FLAG] if share.workload else argv

    def check_script(self, path: str) -> str | None:
        if self.name in declared_strategies(path):
            return None
        return (
            f"{Path(path).name} does not declare FSDP support; add a top-level line "
            f'{DECLARATION} = ["fsdp"] once it shards its model (FLEET_STRATEGY=fsdp tells it), or choose DDP.'
        )


def declared_strategies(path: str) -> tuple[str, ...]:
    """The names in a script's top-level ``FLEET_STRATEGIES = [...]``; () when absent or unreadable."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return ()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == DECLARATION for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                return ()
            if isinstance(value, (list, tuple, set)):
                return tuple(str(item).lower() for item in value)
    return ()
