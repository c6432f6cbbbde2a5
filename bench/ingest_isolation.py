"""Blast radius: the ack latency of well-behaved agents alone, then while one node floods garbage, in one run.

    DATABASE_URL=... REDIS_URL=... SECRET_KEY=dev \\
        python bench/ingest_isolation.py [--agents 8] [--rate 10] [--seconds 20] [--flooders 1] [--repeats 1] \\
                                         [--server "uvicorn:--ws-per-message-deflate=true"]

One server process (uvicorn, COPY writer, the shipped per-node limits; --server adds its options). The
well-behaved agents of bench/ingest.py send frames of 8 GPUs at --rate frames/s each. Phase one measures
their ack latency alone; phase two measures it again while --flooders node(s) send hostile frames as fast
as the connection takes them (not JSON, deep nesting, 1 and 2 MiB of junk, NUL and lone surrogates,
frames whose every sample is refused, unknown GPUs), each flooder from a process of its own, as another
machine would. A flooder expects the server to close it (4429 over its node's limits) and reconnects
10 ms later, again and again, as a broken agent without backoff would (it ignores Retry-After).

Phase three, the floor: the same flooder processes aim at a sink of their own (bench/flood_sink.py: the same
limits and answers, no Django, no database) while the good agents stream to the server. On one machine the
flooder's CPU competes with the server; another host's would not. The floor's delay over "alone" is what
the machine alone costs, and (flooded - alone) / (floor - alone) says how much of the flood's cost is the
server's own.

Reported: p50/p99/max ack latency of the good agents in each phase, the server's, the flooders' and the
sink's CPU (share of one core), the flood's frames, answers and close codes, and that every acked sample is
stored. --repeats N measures N rounds of the three phases on the same server, in alternating order (alone,
flooded, floor; then floor, flooded, alone), and adds the median of the rounds' ratios and differences and
their spread: one round's p99 is mostly the machine's noise.
"""

import argparse
import asyncio
import collections
import itertools
import json
import multiprocessing
import os
import statistics
import time
import uuid
from pathlib import Path

import psutil
from cpu_use import cpu_seconds
from django.conf import settings
from flood_sink import run_sink
from ingest import GPUS, LoadAgent, remove_nodes, start_server, stored_samples  # bench/ is on the path; sets Django up
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from inventory.nodes import add_node

DEEP = "[" * 50_000 + "]" * 50_000
JUNK = '{"type": "samples", "seq": 1, "samples": [], "pad": "' + "x" * (1024 * 1024 - 100) + '"}'
OVERSIZE = JUNK.replace("x" * 1024, "y" * 2048)  # 2 MiB, over AGENT_MAX_FRAME_BYTES


def garbage(flooder: LoadAgent) -> list[str]:
    def frame(seq: int) -> dict:
        return json.loads(flooder.templates[(True, True)] % {"seq": seq, "ts": time.time(), "start": time.time() - 60})

    bad_samples = frame(7)
    for sample in bad_samples["samples"]:
        sample["util_gpu"] = 1e9
    nul = frame(8)
    nul["samples"][0]["processes"][0]["user"] = "\u0000\ud800"
    unknown = frame(9)
    unknown["samples"][0]["gpu"] = "GPU-not-mine"
    refused = [json.dumps(bad_samples), json.dumps(nul), json.dumps(unknown)]
    return ["{not json", DEEP, JUNK, *refused, "[]" * 1000, OVERSIZE]


PHASES = ("alone", "flooded", "floor")


def share(phases: dict, key: str) -> float:
    """The flood's extra delay over the machine floor's (1: no more than the flooder's CPU alone costs)."""
    floor = phases["floor"][key] - phases["alone"][key]
    flooded = phases["flooded"][key] - phases["alone"][key]
    return flooded / floor if floor > 0 else float("inf") if flooded > 0 else 0.0


class Flooder:
    """One hostile node: garbage as fast as the connection takes it; closed, it is back 10 ms later."""

    def __init__(self, agent: LoadAgent):
        self.agent = agent
        self.frames = self.answers = 0
        self.closes: collections.Counter = collections.Counter()

    async def run(self, url: str, stop: asyncio.Event) -> None:
        frames = itertools.cycle(garbage(self.agent))
        while not stop.is_set():
            try:
                headers = {"Authorization": f"Bearer {self.agent.token}"}
                async with connect(url, additional_headers=headers, max_size=None) as ws:
                    reader = asyncio.create_task(self.read(ws))
                    try:
                        await ws.send(self.agent.hello())
                        while not stop.is_set():
                            await ws.send(next(frames))
                            self.frames += 1
                    finally:
                        reader.cancel()
            except ConnectionClosed as closed:
                self.closes[closed.rcvd.code if closed.rcvd else "no close frame"] += 1
            except InvalidStatus as refused:
                self.closes[f"HTTP {refused.response.status_code}"] += 1
            except Exception as error:  # OSError, or websockets' own failure on a transport already gone
                self.closes[type(error).__name__] += 1
            await asyncio.sleep(0.01)

    async def read(self, ws) -> None:
        async for _ in ws:
            self.answers += 1


def flood(hostname: str, token: str, url: str, seconds: float, results) -> None:
    """One flooding node in a process of its own, as it would be on its own machine: the flood's sending
    must not hold up the good agents' event loop, or the bench measures itself."""
    flooder = Flooder(LoadAgent(hostname, token, 32, 0))

    async def run() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(flooder.run(url, stop))
        await asyncio.sleep(seconds)
        stop.set()
        await asyncio.wait_for(task, 30)

    cpu = time.process_time()
    asyncio.run(run())
    results.put((flooder.frames, flooder.answers, dict(flooder.closes), (time.process_time() - cpu) / seconds))


async def phase(
    url: str,
    agents: list[LoadAgent],
    flooders: list[tuple[str, str]],
    flood_url: str,
    warmup: float,
    seconds: float,
    server,
    sink,
) -> dict:
    stop = asyncio.Event()
    tasks = [asyncio.create_task(a.run(url, stop)) for a in agents]
    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    floods = [spawn.Process(target=flood, args=(*f, flood_url, warmup + seconds, results)) for f in flooders]
    for process in floods:
        process.start()
    await asyncio.sleep(warmup)
    first = [len(a.latencies) for a in agents]
    cpu_before, sink_before = cpu_seconds(server), cpu_seconds(sink)
    await asyncio.sleep(seconds)
    server_cpu = (cpu_seconds(server) - cpu_before) / seconds
    sink_cpu = (cpu_seconds(sink) - sink_before) / seconds
    latencies = sorted(x for a, n in zip(agents, first, strict=True) for x in a.latencies[n:])
    stop.set()
    for outcome in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(outcome, BaseException):
            print(f"a client failed: {outcome!r}")
    flooded = [await asyncio.to_thread(results.get, timeout=60) for _ in floods]
    for process in floods:
        process.join(timeout=30)
    if not latencies:
        raise SystemExit("the good agents got no acks; see the server log")
    return {
        "p50": 1000 * statistics.median(latencies),
        "p99": 1000 * latencies[int(len(latencies) * 0.99)],
        "max": 1000 * latencies[-1],
        "acks": len(latencies),
        "server_cpu": server_cpu,
        "sink_cpu": sink_cpu,
        "flood_cpu": sum(cpu for *_, cpu in flooded),
        "flood_frames": sum(frames for frames, *_ in flooded),
        "flood_answers": sum(answers for _, answers, *_ in flooded),
        "flood_closes": sum((collections.Counter(closes) for _, _, closes, _ in flooded), collections.Counter()),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--rate", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--flooders", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1, help="rounds of the three phases, in alternating order")
    parser.add_argument("--server", default="uvicorn", help='e.g. "uvicorn:--ws-per-message-deflate=true"')
    parser.add_argument("--logs", default="var/bench")
    args = parser.parse_args()
    run = uuid.uuid4().hex[:6]
    nodes = [add_node(f"iso-{run}-{i:03d}") for i in range(args.agents + args.flooders)]
    node_ids = [node.pk for node, _ in nodes]
    Path(args.logs).mkdir(parents=True, exist_ok=True)
    # The shipped per-node limits (bench/ingest.py lifts them for its load generator unless they are set).
    os.environ.setdefault("AGENT_MAX_FRAMES_PER_S", str(settings.AGENT_MAX_FRAMES_PER_S))
    os.environ.setdefault("AGENT_MAX_BYTES_PER_S", str(settings.AGENT_MAX_BYTES_PER_S))
    process, port = start_server(args.server, "copy", Path(args.logs))
    url = f"ws://127.0.0.1:{port}/ws/agent/"
    spawn = multiprocessing.get_context("spawn")
    ports = spawn.Queue()
    limits = (settings.AGENT_MAX_FRAMES_PER_S, settings.AGENT_MAX_BYTES_PER_S, settings.AGENT_LIMIT_BURST_S)
    lifetime = args.repeats * 3 * (args.warmup + args.seconds + 60)
    sink = spawn.Process(target=run_sink, args=(ports, lifetime, *limits, settings.AGENT_MAX_FRAME_BYTES))
    sink.start()
    sink_url = f"ws://127.0.0.1:{ports.get(timeout=60)}/ws/agent/"
    try:
        good = [LoadAgent(n.hostname, t, 32, args.rate) for n, t in nodes[: args.agents]]
        flooders = [(n.hostname, t) for n, t in nodes[args.agents :]]
        server, sink_process = psutil.Process(process.pid), psutil.Process(sink.pid)
        rounds = []
        for turn in range(args.repeats):
            phases = {}
            for name in PHASES if turn % 2 == 0 else PHASES[::-1]:
                for agent in good:  # a fresh session and seqs (and timestamps past the last phase's) for each phase
                    agent.seq, agent.base_ts = 0, time.time() - 900
                flooding = [] if name == "alone" else flooders
                flood_url = sink_url if name == "floor" else url
                phases[name] = asyncio.run(
                    phase(url, good, flooding, flood_url, args.warmup, args.seconds, server, sink_process)
                )
            rounds.append({name: phases[name] for name in PHASES})
        acked = sum(a.acked for a in good) * GPUS
        stored = stored_samples([n.pk for n, _ in nodes[: args.agents]])
    finally:
        process.terminate()
        process.wait(timeout=20)
        sink.terminate()
        sink.join(timeout=20)
        remove_nodes(node_ids)
    print(f"{args.server}: {args.agents} agents x {GPUS} GPUs at {args.rate:g} frames/s, {args.flooders} "
          f"flooder(s), {args.seconds:g} s per phase, {args.repeats} round(s) of phases, "
          f"flush interval {settings.INGEST_FLUSH_MS:g} ms")  # fmt: skip
    print("round | phase | ack p50 | ack p99 | max | good acks | server CPU | flooder CPU | sink CPU | "
          "flood frames / answers | closes by code")  # fmt: skip
    for number, phases in enumerate(rounds, 1):
        for name, r in phases.items():
            closes = ", ".join(f"{code}: {n}" for code, n in r["flood_closes"].most_common()) or "-"
            print(f"{number} | {name} | {r['p50']:.1f} ms | {r['p99']:.1f} ms | {r['max']:.0f} ms | {r['acks']} | "
                  f"{r['server_cpu']:.0%} | {r['flood_cpu']:.0%} | {r['sink_cpu']:.0%} | "
                  f"{r['flood_frames']} / {r['flood_answers']} | {closes}")  # fmt: skip
    for key in ("p50", "p99"):
        for name in ("flooded", "floor"):
            ratios = [r[name][key] / r["alone"][key] for r in rounds]
            extra = [r[name][key] - r["alone"][key] for r in rounds]
            print(f"{key} {name}/alone: median {statistics.median(ratios):.2f}x (rounds {min(ratios):.2f}x to "
                  f"{max(ratios):.2f}x), median {statistics.median(extra):+.1f} ms (rounds {min(extra):+.1f} to "
                  f"{max(extra):+.1f} ms)")  # fmt: skip
        shares = [share(r, key) for r in rounds]
        print(f"{key} (flooded - alone) / (floor - alone): median {statistics.median(shares):.2f} (rounds "
              f"{min(shares):.2f} to {max(shares):.2f}); flooded - floor: median "
              f"{statistics.median(r['flooded'][key] - r['floor'][key] for r in rounds):+.1f} ms")  # fmt: skip
    print(f"stored = acked: {stored} = {acked} {'yes' if stored == acked else 'NO'}")


if __name__ == "__main__":
    main()
