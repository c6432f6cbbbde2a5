"""How long the Fleet page, /api/fleet/ and a /ws/live/ fleet snapshot take to build, by fleet size.

    DATABASE_URL=... REDIS_URL=... SECRET_KEY=dev python bench/fleet_page.py [--sizes 32,1000] [--runs 5]

Each size is a fleet of simulated 8-GPU nodes with their latest state written (as the ingest leaves it);
the smallest size is the baseline the others are compared with, per GPU. Requests go through Django's
test client in this process (no network), logged in. Nodes are named bench-page-NNN and removed at the end.
"""

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PREFIX = "bench-page-"


def make_fleet(gpus: int) -> None:
    from django.utils import timezone

    from inventory.models import GPU, Node
    from monitoring.agent.metrics import METRIC_KEYS
    from monitoring.agent.simulate import Simulator
    from monitoring.storage.models import GPUState

    remove_fleet()
    now = timezone.now()
    for n in range(gpus // 8):
        node = Node.objects.create(hostname=f"{PREFIX}{n:03}", status="online", last_seen=now)
        readings = Simulator(8, node.hostname).sample(time.time())
        made = GPU.objects.bulk_create(
            GPU(node=node, index=i, uuid=f"GPU-{PREFIX}{n}-{i}", memory_total_mib=81920) for i in range(len(readings))
        )
        GPUState.objects.bulk_create(
            GPUState(
                gpu=gpu,
                last_sample_at=now,
                processes=reading["processes"],
                **{key: reading[key] for key in METRIC_KEYS},
            )
            for gpu, reading in zip(made, readings, strict=True)
        )


def remove_fleet() -> None:
    from inventory.models import GPU, Node

    GPU.objects.filter(node__hostname__startswith=PREFIX).delete()
    Node.objects.filter(hostname__startswith=PREFIX).delete()


def timed(work, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def measure(gpus: int, runs: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from monitoring.live.subscriptions import Subscription

    make_fleet(gpus)
    client = Client()
    client.force_login(get_user_model().objects.get_or_create(username="bench-page-viewer")[0])

    def get(path: str) -> None:
        assert client.get(path).status_code == 200

    return {
        "gpus": gpus,
        "page_ms": timed(lambda: get("/fleet/"), runs),
        "api_ms": timed(lambda: get("/api/fleet/"), runs),
        "snapshot_ms": timed(lambda: Subscription("fleet").snapshot(), runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="32,1000", help="fleet sizes in GPUs (multiples of 8)")
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (the median is shown)")
    args = parser.parse_args()
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    from fleet.startup import setup_django

    setup_django()
    try:
        results = [measure(int(size), args.runs) for size in args.sizes.split(",")]
    finally:
        remove_fleet()
    base = results[0]
    print(f"machine: {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"median of {args.runs} runs")
    print("| GPUs | Fleet page | /api/fleet/ | /ws/live/ snapshot | per GPU vs baseline (page / API / snapshot) |")
    print("|---|---|---|---|---|")
    for r in results:
        ratios = " / ".join(
            f"{(r[key] / r['gpus']) / (base[key] / base['gpus']):.2f}" for key in ("page_ms", "api_ms", "snapshot_ms")
        )
        print(f"| {r['gpus']} | {r['page_ms']:.0f} ms | {r['api_ms']:.0f} ms | {r['snapshot_ms']:.0f} ms | {ratios} |")


if __name__ == "__main__":
    main()
