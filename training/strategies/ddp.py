"""DDP: torchrun starts one process per device and a rendezvous joins the nodes.

torchrun (``python -m torch.distributed.run``) sets WORLD_SIZE, RANK and LOCAL_RANK for each
process, restarts nothing (``--max-restarts 0``) and forwards SIGTERM to its workers. The
workloads detect that environment themselves (training.workloads.distributed); the model's wrap and
checkpoints are its torch side's (training/workloads/strategies/ddp.py).

A researcher's own command runs under the environment's torchrun: a Python program as the script (or
``--module``) with its arguments, anything else (a shell line, a binary) with ``--no-python``.
"""

from __future__ import annotations

import sys

from training.strategies.base import NodeShare, Strategy

TORCHRUN = ("-m", "torch.distributed.run")
# Placeholder module name swapped for a script path: torchrun runs a file when no --module is given.
SCRIPT_PLACEHOLDER = "fleet-user-script"


class DDP(Strategy):
    name = "ddp"
    label = "DDP (torchrun)"
    short = "DDP"
    spans_nodes = True
    process_per_gpu = True

    def command(self, share: NodeShare) -> list[str]:
        multi = share.node_count > 1
        argv = torchrun_argv(
            share.module or SCRIPT_PLACEHOLDER,
            share.processes,
            nnodes=share.node_count,
            node_rank=share.node_rank,
            rdzv_endpoint=share.rendezvous if multi else None,
            rdzv_id=share.rendezvous_id if multi else None,
            script_args=share.args,
            launcher=share.torchrun or None,
        )
        if multi:
            # Node 0 gives up on a node that never joins instead of waiting torchrun's default 10 minutes.
            at = argv.index("--rdzv-conf") + 1
            argv[at] += f",join_timeout={share.rendezvous_timeout_s}"
            if share.local_addr:
                # Each node announces the address the others reach it on. Left to torchrun, it is the host name
                # resolved, which /etc/hosts may point at a loopback address or a multi-homed node at the wrong net.
                argv[at + 1 : at + 1] = ["--local-addr", share.local_addr]
        at = argv.index("--module")
        if share.command:
            argv[at:] = command_words(share)
        elif share.script:
            argv[at : at + 2] = [share.script]
        return argv


def command_words(share: NodeShare) -> list[str]:
    """What follows torchrun's own options for a command run: ``SCRIPT ARGS``, ``--module M ARGS`` or
    ``--no-python PROGRAM ARGS`` (a shell line, a binary, or Python started with options of its own)."""
    words = share.command
    if share.python_program and len(words) > 1:
        if words[1] == "-m" and len(words) > 2:
            return ["--module", *words[2:]]
        if not words[1].startswith("-"):
            return words[1:]
    return ["--no-python", *words]


def torchrun_argv(
    script_module: str,
    nproc_per_node: int,
    nnodes: int = 1,
    node_rank: int = 0,
    rdzv_endpoint: str | None = None,
    rdzv_id: str | None = None,
    script_args: list[str] | None = None,
    launcher: list[str] | None = None,
) -> list[str]:
    """The argument list (never a shell string) that runs ``script_module`` under torchrun.

    One node without an endpoint uses ``--standalone``: a rendezvous on a free
    local port, so two runs on one node never collide. Several nodes meet at a
    c10d rendezvous on ``rdzv_endpoint`` (``host:port`` on node 0, which
    serves it) under ``rdzv_id``, the same on every node of the run.
    """
    if nproc_per_node < 1 or nnodes < 1:
        raise ValueError("nproc_per_node and nnodes must be at least 1")
    if not 0 <= node_rank < nnodes:
        raise ValueError(f"node_rank {node_rank} is outside 0..{nnodes - 1}")
    argv = [*(launcher or [sys.executable, *TORCHRUN]), "--nproc-per-node", str(nproc_per_node), "--max-restarts", "0"]
    if nnodes == 1 and rdzv_endpoint is None:
        argv += ["--standalone", "--nnodes", "1"]
    else:
        if not rdzv_endpoint or not rdzv_id:
            raise ValueError("a multi-node run needs rdzv_endpoint (host:port) and rdzv_id")
        argv += [
            "--nnodes",
            str(nnodes),
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            rdzv_endpoint,
            "--rdzv-id",
            rdzv_id,
            # c10d ignores --node-rank (it hands out ranks itself); node 0 is the
            # node at the endpoint and serves the rendezvous store, said outright
            # rather than guessed from host names.
            "--rdzv-conf",
            f"is_host={'true' if node_rank == 0 else 'false'}",
        ]
    return [*argv, "--module", script_module, *(script_args or [])]
