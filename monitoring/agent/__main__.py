"""gpu-fleet-agent (or python -m monitoring.agent) --server wss://HOST [--token-file PATH] [...]

The token comes from --token-file or $FLEET_AGENT_TOKEN: a command line is visible to every user of the
node through ps, so --token still works but warns.
"""

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
SERVER_ENV = "FLEET_AGENT_SERVER"
COMMAND = "gpu-fleet-agent"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=_program_name(),
        description="Stream this node's GPU telemetry to the GPU Fleet server.",
        epilog=(
            f"The node token is printed once by `manage.py fleet_add_node HOSTNAME`. Give it in a file readable "
            f"only by the agent's user (--token-file) or in ${TOKEN_ENV}, never on the command line, which ps "
            "shows to every user of the node."
        ),
    )
    parser.add_argument(
        "--server",
        default=os.environ.get(SERVER_ENV) or None,
        help=f"ws://HOST:PORT or wss://HOST; /ws/agent/ is added (default: ${SERVER_ENV})",
    )
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help=f"file holding the node token (default: the token in ${TOKEN_ENV})",
    )
    parser.add_argument("--token", help=argparse.SUPPRESS)  # still accepted, with a warning: ps shows it
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
    args.token = _token(parser, args)
    if not args.once and not (args.server and args.token):
        parser.error(
            f"--server (or ${SERVER_ENV}) and a token (--token-file, or ${TOKEN_ENV}) are required "
            "unless --once is given"
        )
    if args.server:
        from .client import agent_url

        try:
            agent_url(args.server)
        except ValueError as exc:
            parser.error(str(exc))
    return args


def _program_name() -> str:
    called = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return COMMAND if called == COMMAND else "python -m monitoring.agent"


def _token(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """The node token from --token-file, --token (warned about) or the environment, in that order."""
    if args.token_file and args.token:
        parser.error("give the token once: --token-file or --token, not both")
    if args.token_file:
        return _read_token_file(parser, args.token_file)
    if args.token:
        print(
            f"warning: --token is visible to every user of this node through ps; use --token-file PATH "
            f"or ${TOKEN_ENV} instead",
            file=sys.stderr,
        )
        return args.token
    return os.environ.get(TOKEN_ENV) or None


def _read_token_file(parser: argparse.ArgumentParser, path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
        mode = os.stat(path).st_mode
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"cannot read the token file {path}: {getattr(exc, 'strerror', None) or exc}")
    if not token or len(token.split()) != 1:
        parser.error(f"the token file {path} must hold the node token alone, on one line")
    if mode & 0o077:
        print(f"warning: the token file {path} is readable by other users; chmod 600 it", file=sys.stderr)
    return token


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

        # The simulated GPUs also report the runs a node worker started here for this node (localruns.py).
        return Simulator(args.simulate, args.hostname, args.scenario, model=args.gpu_model, local_runs=True)
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
