"""Sample-to-browser latency of the live fleet view with 1,000 GPUs reporting.

    DATABASE_URL=... REDIS_URL=... SECRET_KEY=dev python bench/live_latency.py [--seconds 30] [--repeat 3]

For each scenario it starts a real ASGI server (uvicorn unless named) on fleet.asgi, a load generator
process running N of the real agent clients (monitoring.agent, simulated backend, 8 GPUs each, 1 Hz,
random phases) and, in this process, browser-like clients: logged in with a session cookie, sending the Origin header,
subscribed to the whole fleet on /ws/live/. Every GPU state a client receives is timed against the
`ts` the agent stamped on the sample (one machine, one clock): the latency covers the agent's frame,
validation, the batched write and commit, the coalescing tick, Redis and the consumer.

Scenarios (the same run, so the ratios hold on a noisy machine):
  baseline   1 agent (8 GPUs), 250 ms tick: the pipeline without load
  coalesced  N agents, 250 ms tick (the default): what a page gets
  coalesced-100ms  the same with LIVE_TICK_S=0.1: snappier, 10 messages a second per page
  per-flush  N agents, 20 ms tick: close to one message per ingest flush, the design not taken
  *-pages    the same with --pages fleet pages open at once (the fan-out's cost grows with pages)
  one-insert-per-sample  coalesced, but the server writes one INSERT per sample, one transaction per
             frame (the per-sample writer of bench/baseline_writers.py): the naive baseline of the write path

Nodes are named bench-live-NNN; the script removes them (and their samples) at the end. The servers'
logs go to var/bench-live-server.log.
"""

import argparse
import asyncio
import json
import logging
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleet.embedded import free_port  # noqa: E402
from fleet.serving import local_command  # noqa: E402

PREFIX = "bench-live-"
WARM_UP_S = 10.0
SCENARIOS = (
    "baseline",
    "coalesced",
    "coalesced-100ms",
    "per-flush",
    "coalesced-pages",
    "per-flush-pages",
    "one-insert-per-sample",
)


def setup_django() -> None:
    from fleet.startup import setup_django as setup

    setup()


# --- load generator (a subprocess: --role agents) ---------------------------------------------------------


async def run_agents(server: str, tokens: dict[str, str], gpus: int, interval: float) -> None:
    from monitoring.agent.client import Agent
    from monitoring.agent.simulate import Simulator

    agents = [Agent(Simulator(gpus, host), server, token, host, interval=interval) for host, token in tokens.items()]

    async def start(agent) -> None:
        await asyncio.sleep(random.uniform(0, interval))  # agents on a fleet are not in phase
        await agent.run()

    await asyncio.gather(*(start(agent) for agent in agents))


def agents_main(args) -> None:
    logging.basicConfig(level=logging.WARNING)
    tokens = json.loads(Path(args.tokens).read_text())
    asyncio.run(run_agents(args.server, tokens, args.gpus, args.interval))


# --- the bench (this process) ------------------------------------------------------------------------------


def prepare_nodes(count: int) -> dict[str, str]:
    from inventory.models import Node
    from inventory.nodes import add_node, rotate_token

    tokens = {}
    for n in range(count):
        hostname = f"{PREFIX}{n:03}"
        tokens[hostname] = rotate_token(hostname) if Node.objects.filter(hostname=hostname).exists() else None
        if tokens[hostname] is None:
            tokens[hostname] = add_node(hostname)[1]
    return tokens


def remove_nodes() -> None:
    from inventory.models import GPU, Node

    GPU.objects.filter(node__hostname__startswith=PREFIX).delete()
    Node.objects.filter(hostname__startswith=PREFIX).delete()


def session_cookie() -> str:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="bench-live-viewer")
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def server_environment(tick_s: float, writer: str = "copy") -> dict:
    env = dict(os.environ)
    env.update(DEBUG="0", LIVE_TICK_S=str(tick_s), PYTHONUNBUFFERED="1", LOG_LEVEL="WARNING", BENCH_WRITER=writer)
    return env


def wait_for(url: str, process: subprocess.Popen, timeout_s: float = 60.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer")


class Browser:
    """A page's websocket: subscribes to the fleet and times each GPU state it receives."""

    def __init__(self, url: str, origin: str, cookie: str):
        self.url, self.origin, self.cookie = url, origin, cookie
        self.latencies: list[float] = []
        self.fanout: list[float] = []  # from the group message being built to the page having it
        self.messages = 0
        self.bytes = 0
        self.measuring = False

    async def run(self, ready: asyncio.Event) -> None:
        from django.conf import settings
        from websockets.asyncio.client import connect

        headers = {"Origin": self.origin, "Cookie": f"{settings.SESSION_COOKIE_NAME}={self.cookie}"}
        async with connect(self.url, additional_headers=headers, max_size=64 * 1024 * 1024) as ws:
            await ws.send(json.dumps({"type": "subscribe", "scope": "fleet"}))
            async for text in ws:
                received = time.time()
                message = json.loads(text)
                if message["type"] == "snapshot":
                    ready.set()
                elif message["type"] == "update" and self.measuring:
                    self.messages += 1
                    self.bytes += len(text)
                    self.latencies.extend(received - gpu["ts"] for gpu in message["gpus"] if gpu["ts"])
                    self.fanout.append(received - message["sent_at"])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(browsers: list[Browser], seconds: float, server_pid: int) -> dict:
    import psutil

    server = psutil.Process(server_pid)
    ready = [asyncio.Event() for _ in browsers]
    tasks = [asyncio.create_task(b.run(r)) for b, r in zip(browsers, ready, strict=True)]
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), 60)
    await asyncio.sleep(WARM_UP_S)
    cpu_before = server.cpu_times()
    for b in browsers:
        b.measuring = True
    await asyncio.sleep(seconds)
    for b in browsers:
        b.measuring = False
    cpu_after = server.cpu_times()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    latencies = [x for b in browsers for x in b.latencies]
    fanout = [x for b in browsers for x in b.fanout]
    if not latencies:
        raise RuntimeError(f"no GPU state reached the pages in {seconds:g} s; see var/bench-live-server.log")
    busy = (cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system)
    return {
        "states": len(latencies),
        "p50_ms": 1000 * percentile(latencies, 0.50),
        "p99_ms": 1000 * percentile(latencies, 0.99),
        "max_ms": 1000 * max(latencies),
        "mean_ms": 1000 * statistics.fmean(latencies),
        "fanout_p50_ms": 1000 * percentile(fanout, 0.50),
        "fanout_p99_ms": 1000 * percentile(fanout, 0.99),
        "msgs_per_s": sum(b.messages for b in browsers) / len(browsers) / seconds,
        "states_per_s": len(latencies) / len(browsers) / seconds,
        "kib_per_s": sum(b.bytes for b in browsers) / len(browsers) / seconds / 1024,
        "server_cpu_pct": 100 * busy / seconds,
    }


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()  # uvicorn may wait long for hundreds of sockets to close
        process.wait()


def run_scenario(name: str, agents: int, tick_s: float, pages: int, writer: str, asgi: str, args) -> dict:
    tokens = prepare_nodes(agents)
    (ROOT / "var").mkdir(exist_ok=True)
    tokens_file = ROOT / "var" / "bench-live-tokens.json"
    tokens_file.write_text(json.dumps(tokens))
    port = free_port()
    log = open(ROOT / "var" / "bench-live-server.log", "ab")
    env = server_environment(tick_s, writer)
    argv = local_command(port, "--log-level", "warning")
    if writer != "copy":  # the same server with a baseline writer (bench/baseline_writers.py)
        argv = [sys.executable, str(ROOT / "bench" / "baseline_server.py"), *argv[3:]]
    server = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=log)
    load = None
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(url + "/healthz", server)
        load = subprocess.Popen(
            [sys.executable, __file__, "--role", "agents", "--server", f"ws://127.0.0.1:{port}"]
            + ["--tokens", str(tokens_file), "--gpus", str(args.gpus), "--interval", str(args.interval)],
            cwd=ROOT,
            env=server_environment(tick_s),
        )
        cookie = session_cookie()
        browsers = [Browser(f"ws://127.0.0.1:{port}/ws/live/", url, cookie) for _ in range(pages)]
        result = asyncio.run(measure(browsers, args.seconds, server.pid))
    finally:
        for process in (load, server):
            if process is not None:
                stop(process)
        tokens_file.unlink(missing_ok=True)
        log.close()
    result.update(scenario=name, gpus=agents * args.gpus, tick_ms=tick_s * 1000, pages=pages, writer=writer, asgi=asgi)
    print(json.dumps(result), flush=True)
    return result


def report(results: list[dict], args) -> None:
    baseline = results[0]
    print(f"\nmachine: {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{args.seconds:g} s measured per run after {WARM_UP_S:g} s warm-up; median of {args.repeat} run(s)")
    head = "| scenario | server / writer | GPUs | pages | tick | p50 | p99 | max | p99 / baseline | fan-out p50 / p99 "
    print(head + "| GPU states/s per page | msgs/s per page | KiB/s per page | server CPU |")
    print("|" + "---|" * 14)
    for r in results:
        print(
            f"| {r['scenario']} | {r['asgi']} / {r['writer']} | {r['gpus']} | {r['pages']} | {r['tick_ms']:g} ms"
            f" | {r['p50_ms']:.0f} ms"
            f" | {r['p99_ms']:.0f} ms | {r['max_ms']:.0f} ms | {r['p99_ms'] / baseline['p99_ms']:.2f}"
            f" | {r['fanout_p50_ms']:.0f} / {r['fanout_p99_ms']:.0f} ms"
            f" | {r['states_per_s']:.0f} | {r['msgs_per_s']:.1f}"
            f" | {r['kib_per_s']:.0f} | {r['server_cpu_pct']:.0f} % of a core |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--role", choices=["bench", "agents"], default="bench")
    parser.add_argument("--agents", type=int, default=125, help="simulated nodes in the loaded scenarios")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between an agent's samples")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds per scenario")
    parser.add_argument("--pages", type=int, default=10, help="fleet pages open at once in the *-pages scenarios")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each scenario (medians are reported)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--server", help=argparse.SUPPRESS)
    parser.add_argument("--tokens", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "agents":
        agents_main(args)
        return
    setup_django()
    plans = {  # agents, tick, pages, writer, server
        "baseline": (1, 0.25, 1, "copy", "uvicorn"),
        "coalesced": (args.agents, 0.25, 1, "copy", "uvicorn"),
        "coalesced-100ms": (args.agents, 0.1, 1, "copy", "uvicorn"),
        "per-flush": (args.agents, 0.02, 1, "copy", "uvicorn"),
        "coalesced-pages": (args.agents, 0.25, args.pages, "copy", "uvicorn"),
        "per-flush-pages": (args.agents, 0.02, args.pages, "copy", "uvicorn"),
        "one-insert-per-sample": (args.agents, 0.25, 1, "per-sample", "uvicorn"),
    }
    names = args.scenarios.split(",")
    runs: dict[str, list[dict]] = {name: [] for name in names}
    try:
        for _ in range(args.repeat):  # round robin, so a busy spell on the machine hits every scenario alike
            for name in names:
                runs[name].append(run_scenario(name, *plans[name], args))
    finally:
        remove_nodes()
    report([median_run(runs[name]) for name in names], args)


def median_run(results: list[dict]) -> dict:
    """The median of each figure over the repeats of one scenario."""
    merged = dict(results[0])
    for key, value in results[0].items():
        if isinstance(value, float):
            merged[key] = statistics.median(r[key] for r in results)
    return merged


if __name__ == "__main__":
    main()
