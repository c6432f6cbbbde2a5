"""Own launcher: the command starts its own processes (DeepSpeed, accelerate, JAX, MPI); the fleet starts it
once per node and tells it where the other nodes are.

Every node's command gets FLEET_NUM_NODES, FLEET_NODE_RANK, FLEET_NODE_IPS (the nodes' addresses, in rank
order, comma-separated), FLEET_GPUS_PER_NODE, and MASTER_ADDR and MASTER_PORT: node 0's address and a port
free there when the run started. Only a researcher's own command runs under it.
"""

from __future__ import annotations

from training.strategies.base import NodeShare, Strategy


class Launcher(Strategy):
    name = "launcher"
    label = "Own launcher"
    short = "launcher"
    spans_nodes = True
    single_process = True
    runs_scripts = False
    runs_workloads = False
    profiles = False
    exports_rendezvous = True
    hint = "your command starts its own processes (accelerate, DeepSpeed, MPI); the fleet starts it once per node."

    def command_env(self, share: NodeShare) -> dict[str, str]:
        host, _, port = share.rendezvous.rpartition(":")
        return {
            "FLEET_NUM_NODES": str(share.node_count),
            "FLEET_NODE_RANK": str(share.node_rank),
            "FLEET_NODE_IPS": ",".join(share.node_addrs),
            "FLEET_GPUS_PER_NODE": str(share.gpus),
            "MASTER_ADDR": host,
            "MASTER_PORT": port,
        }
