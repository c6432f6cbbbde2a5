"""Fixtures for the alert, notification and cost tests (their conftests import them): a clock, one GPU, a worker."""

from datetime import UTC, datetime

import pytest
import time_machine

from tests.support.ingest import agent  # noqa: F401  (a fixture: a scripted agent through the real ingest)
from tests.support.telemetry import add_gpu

T0 = datetime(2026, 11, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock():
    """Time stands still at T0 until a test moves it (traveller.move_to / shift)."""
    with time_machine.travel(T0, tick=False) as traveller:
        yield traveller


@pytest.fixture(autouse=True)
def ten_second_samples(settings):
    """The synthetic agents sample every 10 s, and the server knows it."""
    settings.AGENT_INTERVAL_S = 10.0


@pytest.fixture
def gpu(db):
    return add_gpu("gpu-01", 0)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """The cast's four accounts would otherwise cost seconds of PBKDF2 per test on this 2-core machine."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


NODE = "reclaim-node"


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """One real worker for the session: the central queue and the test node's queue, short retry backoff."""
    from fleet.celery import node_queue
    from tests.support.processes import process_environment, wait_for_other_sessions_to_end
    from tests.support.workers import CeleryWorker

    with django_db_blocker.unblock():
        env = process_environment(
            NOTIFY_RETRY_BASE_S="0.5",
            NOTIFY_MAX_RETRIES="3",
            WEBHOOK_TIMEOUT_S="3",
            WEBHOOK_ALLOWED_NETWORKS="127.0.0.1/32",  # the tests' receivers listen there
            NOTIFY_GROUP_WINDOW_S="3",  # a run's grouped email waits this long (tests set the same in-process)
        )
        worker = CeleryWorker(["default", node_queue(NODE)], env, tmp_path_factory.mktemp("worker") / "worker.log")
    yield worker
    worker.stop()
    with django_db_blocker.unblock():
        wait_for_other_sessions_to_end()
