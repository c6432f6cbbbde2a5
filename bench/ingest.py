"""Ingest throughput: simulated agents × 8 GPUs streaming to the real ASGI server, every sample checked.

    DATABASE_URL=... REDIS_URL=... SECRET_KEY=dev \\
        python bench/ingest.py [--agents 16] [--seconds 20] [--servers uvicorn] \\
                               [--writers insert,copy,per-sample] [--rate 0]

For each server and writer (copy is the product's; insert and per-sample are bench/baseline_writers.py's) it
starts the server (one process), registers fresh nodes, and runs a
load generator that speaks protocol v1: hello, then samples frames of 8 GPUs (one training process
each) as fast as acks allow (at most --window unacked frames per agent) or at --rate frames/s per
agent. It reports samples/s acked (an ack means committed) over the measured window, the server's
and PostgreSQL's CPU per 1,000 samples (psutil, user + system; see DatabaseCPU), ack latency, and
checks that the database holds exactly the acked samples. The nodes and their rows are deleted afterwards.
With --claims every process names a run placed on its GPU (FLEET_RUN_ID), so each flush checks the claims.
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import psutil
from websockets.asyncio.client import connect

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")

import django  # noqa: E402

django.setup()

from cpu_use import DatabaseCPU, cpu_seconds, own_cpu  # noqa: E402
from django.db import connection  # noqa: E402

from fleet.embedded import free_port  # noqa: E402
from fleet.serving import local_command  # noqa: E402
from inventory.nodes import add_node  # noqa: E402
from monitoring.agent import metrics  # noqa: E402
from monitoring.agent.metrics import METRIC_KEYS, METRICS  # noqa: E402

GPUS = 8
READING = {
    "util_gpu": 97, "util_mem": 41, "mem_used_mib": 60211, "temp_c": 71, "power_w": 512.3, "sm_clock_mhz": 1980,
    "mem_clock_mhz": 2619, "fan_pct": None, "pcie_tx_kib_s": 1200, "pcie_rx_kib_s": 88000, "ecc_volatile": 0,
    "clocks_event_reasons": 0,
}  # fmt: skip
# The health counters of a current agent (a real A100's answers); a tree without them ignores them.
HEALTH = {
    "mem_temp_c": 79, "util_enc": 0, "util_dec": 3, "mem_reserved_mib": 529, "nvlink_tx_kib_s": 18000000,
    "nvlink_rx_kib_s": 17500000, "energy_mj": 9876543210, "pcie_replays": 0, "xid_count": 0, "xid_last": 0,
    "retired_sbe": None, "retired_dbe": None, "retired_pending": None, "remapped_correctable": 0,
    "remapped_uncorrectable": 0, "remap_pending": 0, "remap_failure": 0,
}  # fmt: skip
READING.update({key: value for key, value in HEALTH.items() if key in METRIC_KEYS})
# NVLink per link, as an H100 (18 links, the most of today's GPUs) sends it; a tree without it sends none.
LINKS = [{"tx_kib_s": 1_000_000, "rx_kib_s": 972_222}] * 18 if getattr(metrics, "NVLINK", None) else None
LINKS_EVERY = int(getattr(metrics, "NVLINK_EVERY_S", 1))  # frames, at one frame a second
SLOW_KEYS = tuple(m.key for m in METRICS if getattr(m, "every_s", 0))
SLOW_EVERY = 30  # frames, at one frame a second
assert set(READING) == set(METRIC_KEYS)


def server_argv(kind: str, port: int) -> list[str]:
    """The server, optionally with more of uvicorn's options: "uvicorn", "uvicorn:--workers 2".

    It is served as production is (fleet/serving.py's websocket options first), so options given here override them.
    """
    name, _, options = kind.partition(":")
    if name != "uvicorn":
        raise SystemExit(f"{name!r}: the product is served by uvicorn (fleet/serving.py)")
    return local_command(port, *options.split())


def writer_argv(argv: list[str], writer: str) -> list[str]:
    """The product's server (copy), or the same server with a baseline writer (bench/baseline_server.py)."""
    if writer == "copy":
        return argv
    return [sys.executable, str(BASE_DIR / "bench" / "baseline_server.py"), *argv[3:]]


def start_server(kind: str, writer: str, log_dir: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = dict(os.environ, BENCH_WRITER=writer, DEBUG="0", LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1")
    # The load generator sends frames as fast as acks allow, far above an agent's rate: lift the per-connection
    # limits (still checked on every frame) unless the caller set them.
    env.setdefault("AGENT_MAX_FRAMES_PER_S", "1000000")
    env.setdefault("AGENT_MAX_BYTES_PER_S", "10000000000")
    log = open(log_dir / f"server-{kind.partition(':')[0]}-{writer}.log", "wb")
    argv = writer_argv(server_argv(kind, port), writer)
    process = subprocess.Popen(argv, cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
            return process, port
        except urllib.error.HTTPError:
            return process, port
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{kind} did not start; see {log.name}") from None
            time.sleep(0.2)


class LoadAgent:
    """One node: hello, then frames of 8 GPUs with pre-encoded JSON, acks counted and timed."""

    def __init__(self, hostname: str, token: str, window: int, rate: float, claim: int | None = None):
        self.hostname, self.token, self.window, self.rate = hostname, token, window, rate
        self.claim = claim  # the run every process names (--claims), or None for processes the fleet did not start
        self.uuids = [f"GPU-{uuid.uuid4()}" for _ in range(GPUS)]
        self.sent: dict[int, float] = {}
        self.acked = 0
        self.errors: list[dict] = []
        self.latencies: list[float] = []
        self.seq = 0
        # Whole milliseconds: with "%(ts).3f" a base near the half-way point made two seqs one ts (a replay).
        self.base_ts = round(time.time() - 1800, 3)
        self.templates = self.frame_templates()

    def frame_templates(self) -> dict[tuple[bool, bool], str]:
        """The frames' texts by (with_slow, with_links), to fill with seq, ts and start (made again once claim is set).

        As a real agent sends them (monitoring/agent/cadence.py): slow fields once in SLOW_EVERY frames, per-link
        NVLink figures once in LINKS_EVERY; (True, True) is a frame with every field."""
        return {(slow, links): self._frame_template(slow, links) for slow in (False, True) for links in (False, True)}

    def _frame_template(self, with_slow: bool, with_links: bool) -> str:
        samples = []
        reading = {key: value for key, value in READING.items() if with_slow or key not in SLOW_KEYS}
        for i, gpu in enumerate(self.uuids):
            process = {"pid": 4000 + i, "user": "alice", "name": "python", "cmdline": "python train.py --lr 3e-4",
                       "mem_used_mib": 59000, "sm_util": 95, "started_at": "__START__"}  # fmt: skip
            if self.claim is not None:
                process["run"] = self.claim
            links = {metrics.NVLINK: LINKS} if LINKS and with_links else {}
            samples.append({"ts": "__TS__", "gpu": gpu, **reading, **links, "processes": [process]})
        text = json.dumps({"type": "samples", "seq": "__SEQ__", "samples": samples}, separators=(",", ":"))
        return (
            text.replace('"__SEQ__"', "%(seq)d").replace('"__TS__"', "%(ts).3f").replace('"__START__"', "%(start).3f")
        )

    def hello(self) -> str:
        gpus = [
            {"index": i, "uuid": gpu, "name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "power_limit_w": 700,
             "pcie_gen": 5, "pcie_width": 16, "mig": False}
            for i, gpu in enumerate(self.uuids)
        ]  # fmt: skip
        return json.dumps({"type": "hello", "protocol": 1, "hostname": self.hostname, "agent_version": "bench",
                           "driver_version": "550", "cuda_version": "12.4", "boot_id": "bench",
                           "session": uuid.uuid4().hex, "gpus": gpus})  # fmt: skip

    async def run(self, url: str, stop: asyncio.Event) -> None:
        async with connect(url, additional_headers={"Authorization": f"Bearer {self.token}"}, max_size=2**20) as ws:
            await ws.send(self.hello())
            welcome = json.loads(await ws.recv())
            assert welcome["type"] == "welcome", welcome
            room = asyncio.Semaphore(self.window)
            receiver = asyncio.create_task(self.receive(ws, room))
            try:
                await self.send_until(ws, room, stop)
                deadline = time.monotonic() + 30
                while self.sent and time.monotonic() < deadline and not receiver.done():
                    await asyncio.sleep(0.05)
            finally:
                receiver.cancel()

    async def send_until(self, ws, room: asyncio.Semaphore, stop: asyncio.Event) -> None:
        period = 1 / self.rate if self.rate else 0
        next_at = time.monotonic()
        while not stop.is_set():
            await room.acquire()
            if period:
                next_at += period
                await asyncio.sleep(max(0, next_at - time.monotonic()))
            self.seq += 1
            ts = self.base_ts + self.seq * 0.001
            template = self.templates[(self.seq % SLOW_EVERY == 1, self.seq % LINKS_EVERY == 1 % LINKS_EVERY)]
            text = template % {"seq": self.seq, "ts": ts, "start": ts - 600}
            self.sent[self.seq] = time.perf_counter()
            await ws.send(text)

    async def receive(self, ws, room: asyncio.Semaphore) -> None:
        async for message in ws:
            frame = json.loads(message)
            if frame.get("type") == "ack" and frame["seq"] in self.sent:
                self.latencies.append(time.perf_counter() - self.sent.pop(frame["seq"]))
                self.acked += 1
                room.release()
            elif frame.get("type") == "error":
                self.errors.append(frame)
                self.sent.pop(frame.get("seq"), None)
                room.release()


async def measure(agents: list[LoadAgent], port: int, server: psutil.Process, warmup: float, seconds: float) -> dict:
    stop = asyncio.Event()
    url = f"ws://127.0.0.1:{port}/ws/agent/"
    tasks = [asyncio.create_task(agent.run(url, stop)) for agent in agents]
    await asyncio.sleep(warmup)
    acked_before, cpu_before, own_before = sum(a.acked for a in agents), cpu_seconds(server), own_cpu()
    database = DatabaseCPU()
    await asyncio.to_thread(database.start)
    latencies_from = [len(a.latencies) for a in agents]
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - started
    acked = sum(a.acked for a in agents) - acked_before
    cpu, own = cpu_seconds(server) - cpu_before, own_cpu() - own_before
    db = await asyncio.to_thread(database.stop)
    latencies = sorted(x for a, first in zip(agents, latencies_from, strict=True) for x in a.latencies[first:])
    stop.set()
    await asyncio.gather(*tasks)
    samples = acked * GPUS
    return {
        "samples_per_s": samples / elapsed,
        "server_cpu_ms_per_1000": 1000 * cpu / (samples / 1000) if samples else float("nan"),
        "server_cpu_share": cpu / elapsed,
        "db_cpu_ms_per_1000": 1000 * db / (samples / 1000) if samples else float("nan"),
        "generator_cpu_share": own / elapsed,
        "ack_p50_ms": 1000 * statistics.median(latencies) if latencies else float("nan"),
        "ack_p99_ms": 1000 * latencies[int(len(latencies) * 0.99)] if latencies else float("nan"),
    }


def stored_samples(node_ids: list[int]) -> int:
    with connection.cursor() as cursor:
        gpus = "SELECT id FROM fleet_gpu WHERE node_id = ANY(%s)"
        cursor.execute(f"SELECT count(*) FROM monitoring_gpusample WHERE gpu_id IN ({gpus})", [node_ids])
        return cursor.fetchone()[0]


def remove_nodes(node_ids: list[int]) -> None:
    with connection.cursor() as cursor:
        gpus = "(SELECT id FROM fleet_gpu WHERE node_id = ANY(%s))"
        for table in (
            "monitoring_gpusample",
            "monitoring_processsample",
            "monitoring_gpuminute",
            "monitoring_gpuhour",
            "monitoring_nvlinkstate",
            "monitoring_gpustate",
        ):
            cursor.execute(f"DELETE FROM {table} WHERE gpu_id IN {gpus}", [node_ids])
        cursor.execute(f"DELETE FROM training_run_gpus WHERE gpu_id IN {gpus}", [node_ids])  # --claims
        cursor.execute("DELETE FROM fleet_gpu WHERE node_id = ANY(%s)", [node_ids])
        for table in ("monitoring_agentsession", "monitoring_nodestatuschange"):
            cursor.execute(f"DELETE FROM {table} WHERE node_id = ANY(%s)", [node_ids])
        cursor.execute("DELETE FROM fleet_node WHERE id = ANY(%s)", [node_ids])


def place_run(node, uuids: list[str]) -> int:
    """A running run placed on the node's GPUs (made before the hello, which then finds them), for --claims."""
    from django.contrib.auth import get_user_model

    from inventory.models import GPU
    from training.models import Run

    owner, _ = get_user_model().objects.get_or_create(username="bench-owner")
    gpus = [GPU.objects.create(node=node, index=i, uuid=gpu) for i, gpu in enumerate(uuids)]
    run = Run.objects.create(owner=owner, name="bench", workload="digits_cnn", strategy="single", status="running")
    run.gpus.set(gpus)
    return run.pk


def run_one(kind: str, writer: str, args, log_dir: Path) -> dict:
    run = uuid.uuid4().hex[:6]
    nodes = [add_node(f"bench-{run}-{i:03d}") for i in range(args.agents)]
    node_ids = [node.pk for node, _ in nodes]
    process, port = start_server(kind, writer, log_dir)
    try:
        agents = [LoadAgent(node.hostname, token, args.window, args.rate) for node, token in nodes]
        if args.claims:
            for agent, (node, _) in zip(agents, nodes, strict=True):
                agent.claim = place_run(node, agent.uuids)
                agent.templates = agent.frame_templates()
        result = asyncio.run(measure(agents, port, psutil.Process(process.pid), args.warmup, args.seconds))
        acked = sum(a.acked for a in agents) * GPUS
        stored = stored_samples(node_ids)
        result.update(acked=acked, stored=stored, errors=sum(len(a.errors) for a in agents))
        result["zero_loss"] = stored == acked and not any(a.sent for a in agents) and not result["errors"]
        return result
    finally:
        process.terminate()
        process.wait(timeout=20)
        remove_nodes(node_ids)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=5)
    parser.add_argument("--window", type=int, default=32, help="unacked frames an agent may have out")
    parser.add_argument("--rate", type=float, default=0, help="frames/s per agent (0: as fast as acks allow)")
    parser.add_argument("--servers", default="uvicorn", help='e.g. "uvicorn,uvicorn:--workers 2"')
    parser.add_argument("--writers", default="insert,copy,per-sample")
    parser.add_argument("--logs", default=str(BASE_DIR / "var" / "bench"))
    parser.add_argument("--claims", action="store_true", help="every process names a run placed on its GPU")
    args = parser.parse_args()
    log_dir = Path(args.logs)
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"{args.agents} agents x {GPUS} GPUs, {args.seconds:g} s measured after {args.warmup:g} s warm-up, "
          f"window {args.window}, rate {args.rate or 'max'}; {os.cpu_count()} cores")  # fmt: skip
    print(" | ".join(COLUMNS))
    for kind in args.servers.split(","):
        for writer in args.writers.split(","):
            label = f"{kind} / {writer}" + (" + run claims" if args.claims else "")
            print(row(label, run_one(kind, writer, args, log_dir)), flush=True)


COLUMNS = [
    "server / writer",
    "samples/s",
    "server CPU ms/1k",
    "DB CPU ms/1k",
    "server CPU",
    "load gen CPU",
    "ack p50",
    "ack p99",
    "stored = acked",
]


def row(label: str, r: dict) -> str:
    verdict = "yes" if r["zero_loss"] else f"NO ({r['errors']} errors)"
    cells = [
        label,
        f"{r['samples_per_s']:,.0f}",
        f"{r['server_cpu_ms_per_1000']:.1f}",
        f"{r['db_cpu_ms_per_1000']:.1f}",
        f"{r['server_cpu_share']:.0%}",
        f"{r['generator_cpu_share']:.0%}",
        f"{r['ack_p50_ms']:.0f} ms",
        f"{r['ack_p99_ms']:.0f} ms",
        f"{r['stored']:,} = {r['acked']:,} {verdict}",
    ]
    return " | ".join(cells)


if __name__ == "__main__":
    main()
