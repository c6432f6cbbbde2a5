"""Start real processes for tests (the ASGI server, workers, agents) against the test database."""

import os
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import psutil
from django.conf import settings
from django.db import connection

from fleet import serving
from fleet.embedded import free_port

BASE_DIR = Path(settings.BASE_DIR)
# Each process the tests start names its database sessions (libpq's PGAPPNAME) with this and its own suffix.
SESSION_NAME_PREFIX = "fleet-test-"


def database_url_for_processes() -> str:
    """The URL of the database the tests are using right now (pytest-django's test_… copy)."""
    db = connection.settings_dict
    user = db["USER"] or "postgres"
    auth = f"{user}:{db['PASSWORD']}@" if db["PASSWORD"] else f"{user}@"
    host = db["HOST"] or ""
    if host.startswith("/"):
        return f"postgresql://{auth}/{db['NAME']}?host={host}"
    return f"postgresql://{auth}{host}:{db['PORT'] or 5432}/{db['NAME']}"


def process_environment(**extra: str) -> dict:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url_for_processes(),
        REDIS_URL=settings.REDIS_URL,
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        SECRET_KEY=settings.SECRET_KEY,
        DEBUG="0",
        PYTHONUNBUFFERED="1",
        PGAPPNAME=f"{SESSION_NAME_PREFIX}{uuid.uuid4().hex[:12]}",
    )
    env.update(extra)
    return env


def wait_for_http(url: str, timeout_s: float = 90.0, process: subprocess.Popen | None = None) -> None:
    # Generous: a busy two-core machine took 28 s to start the test web server.
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout_s} s")


class ServerProcess:
    """The web server as production runs it (fleet/serving.py) on a loopback port (a free one unless given,
    e.g. to restart on the same); `command` names another way to start it, given the port."""

    def __init__(self, env: dict, log_path: Path, port: int | None = None, command=serving.local_command):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(log_path, "wb")
        argv = command(self.port)
        self.process = subprocess.Popen(argv, env=env, cwd=BASE_DIR, stdout=self.log, stderr=subprocess.STDOUT)
        wait_for_http(self.url + "/healthz", process=self.process)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def wait_for_other_sessions_to_end(timeout_s: float = 10.0) -> None:
    """A stopped process's database sessions end a moment later; the test database can only be dropped then.

    Sessions of test processes still running (the session's web server) are not waited for: each process the
    tests start names its sessions (process_environment), and a name whose process lives is left alone.
    """
    deadline = time.monotonic() + timeout_s
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT application_name FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            names = {name for (name,) in cursor.fetchall()}
            if not names or names <= running_session_names():
                return
            time.sleep(0.1)


def running_session_names() -> set[str]:
    """The session names of the test processes alive now (a zombie has ended)."""
    names = set()
    for process in psutil.process_iter():
        try:
            name = process.environ().get("PGAPPNAME", "")
        except psutil.Error:
            continue
        if name.startswith(SESSION_NAME_PREFIX):
            names.add(name)
    return names
