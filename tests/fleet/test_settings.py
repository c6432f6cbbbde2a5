"""Settings come from the environment; a bad value stops start-up with one line naming the variable."""

import os
import subprocess
import sys

import pytest
from django.conf import settings

BASE_ENV = {
    "PATH": os.environ["PATH"],
    "SECRET_KEY": "x",
    "DATABASE_URL": "postgresql://u@127.0.0.1:5432/db",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
}


def start_django(**env):
    merged = {key: value for key, value in {**BASE_ENV, **env}.items() if value is not None}
    return subprocess.run(
        [sys.executable, "-c", "from fleet.startup import setup_django; setup_django()"],
        env=merged,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_starts_with_well_formed_urls():
    assert start_django().returncode == 0


@pytest.mark.parametrize(
    "variable, value, words",
    [
        ("DATABASE_URL", "mysql://root@localhost/db", "postgresql://"),
        ("DATABASE_URL", None, "is not set"),
        ("DATABASE_URL", "postgresql://u@host:notaport/db", "port"),
        ("REDIS_URL", "http://localhost:6379", "redis://"),
        ("REDIS_URL", None, "is not set"),
        ("CELERY_BROKER_URL", "kafka://localhost", "amqp://"),
        ("DEBUG", "maybe", "not a boolean"),
        ("SECRET_KEY", None, "is not set"),
        ("EMAIL_PORT", "twenty-five", "whole number"),
        ("AGENT_INTERVAL_S", "-1", "at least"),
        ("RUN_CONTAINER_RUNTIME", "lxc", "podman, docker"),
        ("RUN_CONTAINER_MOUNTS", "/data,datasets", "not an absolute path"),
        ("RUN_CONTAINER_MOUNTS", "/data:/other", "without ':'"),
        ("RUN_CONTAINER_GPUS", "sometimes", "not a boolean"),
    ],
)
def test_a_bad_value_stops_start_up_with_one_line_naming_it(variable, value, words):
    result = start_django(**{variable: value})
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert variable in lines[0] and words in lines[0]


def test_a_rabbitmq_broker_is_accepted():
    assert start_django(CELERY_BROKER_URL="amqp://guest:guest@127.0.0.1:5672//").returncode == 0


@pytest.mark.parametrize("command", ["worker", "beat"])
def test_a_celery_process_with_a_bad_value_stops_with_the_same_one_line(command):
    env = {**BASE_ENV, "DATABASE_URL": "mysql://root@localhost/db"}
    result = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "fleet", command],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "GPU Fleet configuration error: DATABASE_URL must be a postgresql:// URL, not mysql://"
    ]
