"""DDP across two hosts against the same run on one host: samples/s through the whole product.

    .venv/bin/python bench/three_hosts.py [--repeats 3] [--epochs 8]    (as root: it makes network namespaces)

Sets up the three-host test's cluster (tests/deploy/cluster.py: role installs, the web host at a bridge
address, GPU nodes in network namespaces) with three nodes: a and b confined to one CPU core each (two
one-core hosts), and c with both cores (one two-core host). Each repeat launches, through the API and in
turns, the same digits DDP run with two ranks: one rank on a and one on b (their gradients cross the
veth link, the bridge and the rendezvous between namespaces), and two ranks on c (over loopback).
samples/s is each run's steady training-loop rate over both ranks (its `done` event).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.deploy.cluster import gpu_uuids, online_with_gpus, three_hosts, wait_until  # noqa: E402
from tests.deploy.roles import RoleInstalls  # noqa: E402

WORK = REPO / "var" / "bench-three-hosts"
FINISHED = {"succeeded", "failed", "lost", "cancelled"}
ACROSS = "DDP(2) across hosts a and b, 1 core each"
ONE_HOST = "DDP(2) on host c, 2 cores"


def launch(cluster, gpus: list[str], processes: int, epochs: int) -> dict:
    """One DDP run of the digits CNN on ``gpus`` with ``processes`` ranks per node, waited for."""
    hyper = {"epochs": epochs, "batch_size": 32, "lr": 0.003, "optimizer": "adam", "seed": 0}
    run = cluster.api.launch(
        workload="digits_cnn", strategy="ddp", gpus=gpus, processes=processes, hyperparameters=hyper
    )
    return cluster.api.wait_run(run["id"], FINISHED, timeout_s=600)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()
    roles = RoleInstalls(WORK / "roles")
    rates: dict[str, list[float]] = {ACROSS: [], ONE_HOST: []}
    try:
        with three_hosts(roles, {"a": "0", "b": "1", "c": None}) as cluster:
            wait_until(lambda: online_with_gpus(cluster), 60, "the nodes online with their GPUs")
            plans = {
                ACROSS: ([gpu_uuids(cluster, "a")[0], gpu_uuids(cluster, "b")[0]], 1),
                ONE_HOST: (gpu_uuids(cluster, "c"), 2),
            }
            for repeat in range(args.repeats):
                for name, (gpus, processes) in plans.items():
                    run = launch(cluster, gpus, processes, args.epochs)
                    assert run["status"] == "succeeded", run["error"]
                    rates[name].append(run["result"]["samples_per_s"])
                    accuracy = run["result"]["accuracy"]
                    print(f"repeat {repeat + 1}: {name}: {rates[name][-1]:.0f} samples/s, accuracy {accuracy:.3f}")
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    machine = f"{platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"\n{machine}, load average {os.getloadavg()[0]:.2f}\n")
    base = statistics.median(rates[ONE_HOST])
    print("| run | samples/s (median) | runs | vs one host |")
    print("|---|---|---|---|")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.0f} | {', '.join(f'{v:.0f}' for v in values)} | {median / base:.3f} |")


if __name__ == "__main__":
    main()
