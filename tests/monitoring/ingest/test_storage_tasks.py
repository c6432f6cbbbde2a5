"""The storage beat tasks: registered, run by a real worker, and failures written back to the progress row."""

import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from fleet.celery import app
from monitoring.storage import partitions
from monitoring.storage.models import GPUMinute, RollupProgress
from monitoring.storage.tasks import prepare_partitions, rollup_minutes
from tests.monitoring.ingest.storage import make_gpus, store
from tests.support.processes import BASE_DIR, process_environment, wait_for_other_sessions_to_end

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_telemetry_beat_entry_names_a_registered_task():
    app.loader.import_default_modules()
    entries = {name: entry for name, entry in settings.CELERY_BEAT_SCHEDULE.items() if name.startswith("telemetry-")}
    assert len(entries) == 5
    for entry in entries.values():
        assert entry["task"] in app.tasks, entry["task"]


def test_prepare_partitions_makes_today_and_the_next_two_days():
    prepare_partitions()
    today = timezone.now().date()
    expected = {today + timedelta(days=n) for n in range(3)}
    with connection.cursor() as cursor:
        for table in partitions.TABLES:
            assert expected <= partitions.existing_days(cursor, table)


def test_a_failed_rollup_is_written_back_to_its_progress():
    connection.cursor().execute("ALTER TABLE monitoring_gpuminute RENAME TO gpuminute_away")
    try:
        result = rollup_minutes.apply()
    finally:
        connection.cursor().execute("ALTER TABLE gpuminute_away RENAME TO monitoring_gpuminute")
    assert result.failed()
    progress = RollupProgress.objects.get(table="minute")
    assert "monitoring_gpuminute" in progress.last_error and progress.done_until is None


@pytest.fixture
def worker(tmp_path):
    argv = [sys.executable, "-m", "celery", "-A", "fleet", "worker", "-Q", "default", "--pool", "solo"]
    argv += ["-n", f"telemetry-test-{time.monotonic_ns()}@%h", "--without-heartbeat", "--without-gossip"]
    with open(tmp_path / "worker.log", "wb") as log:
        process = subprocess.Popen(argv, cwd=BASE_DIR, env=process_environment(), stdout=log, stderr=subprocess.STDOUT)
    yield tmp_path / "worker.log"
    process.terminate()
    process.wait(timeout=20)
    wait_for_other_sessions_to_end()


def test_a_worker_rolls_up_the_minutes_it_is_asked_to(worker):
    gpu = make_gpus(1)[0]
    start = (timezone.now() - timedelta(minutes=5)).replace(second=0, microsecond=0)
    store(gpu, start, 120, util_gpu=lambda i: i)
    rollup_minutes.delay()
    deadline = time.monotonic() + 60
    while not RollupProgress.objects.filter(table="minute", done_until__isnull=False).exists():
        assert time.monotonic() < deadline, worker.read_text()[-3000:]
        time.sleep(0.2)
    rows = [(r.bucket, r.samples, r.util_gpu_max) for r in GPUMinute.objects.filter(gpu=gpu).order_by("bucket")]
    assert rows == [(start, 60, 59), (start + timedelta(minutes=1), 60, 119)]
