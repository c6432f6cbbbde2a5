"""python -m monitoring.agent --server ws://HOST:PORT --token TOKEN [...]"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import sys

from .buffer import DEFAULT_CAPACITY, FrameBuffer
from .frames import Backend, hello_frame, samples_frame
from .simulate import MODEL_NAMES, SCENARIOS

log = logging.getLogger("monitoring.agent")

TOKEN_ENV = "FLEET_AGENT_TOKEN"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m monitoring.agent",
        description="Stream this node's GPU telemetry to the GPU Fleet server.",
    )
    parser.add_argument("--server", help="ws://HOST:PORT or wss://HOST (/ws/agent/ is added)")
    parser.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV),
        help=f"node token from fleet_add_node (default: ${TOKEN_ENV}, which keeps it out of ps)",
    )
    parser.add_argument("--interval", type=_positive_float, default=1.0, help="seconds between samples")
    parser.add_argument("--hostname", default=socket.gethostname(), help="node name sent in hello")
    parser.add_argument("--simulate", type=_positive_int, metavar="N", help="simulate N GPUs instead of NVML")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="mixed", help="roles of simulated GPUs")
    parser.add_argument(
        "--gpu-model",
        choices=MODEL_NAMES,
        help="model of simulated GPUs (default: the one the host name mentions, else one chosen by host name)",
    )
    parser.add_argument("--once", action="store_true", help="print hello and one samples frame as JSON, then exit")
    parser.add_argument(
        "--buffer-frames",
        type=_positive_int,
        default=DEFAULT_CAPACITY,
        help="unacked frames kept while the server is unreachable (oldest dropped first)",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)
    if not args.once and not (args.server and args.token):
        parser.error(f"--server and --token (or ${TOKEN_ENV}) are required unless --once is given")
    if args.server:
        from .client import agent_url

        try:
            agent_url(args.server)
        except ValueError as exc:
            parser.error(str(exc))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    backend = _started_backend(args)
    if backend is None:
        return 1
    try:
        if args.once:
            _print_once(backend, args.hostname)
            return 0
        return asyncio.run(_serve(backend, args))
    finally:
        backend.close()


def _started_backend(args: argparse.Namespace) -> Backend | None:
    if args.simulate:
        from .simulate import Simulator

        return Simulator(args.simulate, args.hostname, args.scenario, model=args.gpu_model)
    from .nvml import NvmlBackend, NvmlUnavailable

    backend = NvmlBackend()
    try:
        backend.start()
    except NvmlUnavailable as exc:
        print(
            f"error: cannot read GPUs through NVML ({exc}). Install the NVIDIA driver on this "
            "node, or pass --simulate N to run with N simulated GPUs.",
            file=sys.stderr,
        )
        return None
    return backend


def _print_once(backend: Backend, hostname: str) -> None:
    from uuid import uuid4

    frames = {"hello": hello_frame(backend, hostname, uuid4().hex), "samples": samples_frame(backend, 1)}
    try:
        sys.stdout.write(json.dumps(frames, indent=2) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (head, grep -m) stopped early; not an error for a debugging print.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


async def _serve(backend: Backend, args: argparse.Namespace) -> int:
    from .client import Agent

    agent = Agent(
        backend,
        args.server,
        args.token,
        args.hostname,
        interval=args.interval,
        buffer=FrameBuffer(args.buffer_frames),
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, agent.stop)
    log.info("agent for %s streaming to %s every %s s", args.hostname, agent.url, agent.interval)
    await agent.run()
    log.info("stopped after %d frames", agent.seq)
    return 0


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be a positive number")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


if __name__ == "__main__":
    sys.exit(main())
