"""The beat task runs in a real Celery worker process and releases a no-show booking."""

import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from fleet.celery import app
from inventory.models import GPU
from reservations.models import Reservation, ReservationEvent
from reservations.watch import watch_reservations_task
from tests.support.gpus import set_states
from tests.support.processes import BASE_DIR, process_environment, wait_for_other_sessions_to_end

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(tmp_path):
    log = open(tmp_path / "worker.log", "wb")
    argv = [sys.executable, "-m", "celery", "-A", "fleet", "worker", "-Q", "default", "--pool", "solo", "-l", "INFO"]
    process = subprocess.Popen(argv, env=process_environment(), cwd=BASE_DIR, stdout=log, stderr=subprocess.STDOUT)
    yield process
    process.terminate()
    process.wait(timeout=20)
    log.close()
    wait_for_other_sessions_to_end()


def test_beat_runs_the_watch_every_minute():
    entry = settings.CELERY_BEAT_SCHEDULE["watch-reservations"]
    assert entry == {"task": "fleet.watch_reservations", "schedule": 60.0}
    assert watch_reservations_task.name == "fleet.watch_reservations"


def test_a_worker_releases_a_booking_nobody_used(cast, fleet_gpus, worker, tmp_path):
    now = timezone.now()
    gpu = fleet_gpus[0]
    Reservation.objects.create(
        user=cast["owner"], gpu=gpu, start=now - timedelta(minutes=31), end=now + timedelta(hours=2)
    )
    set_states(GPU.objects.filter(pk=gpu.pk), processes=[], last_sample_at=now)

    app.send_task("fleet.watch_reservations")  # what beat sends each minute
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and Reservation.objects.get().status == "active":
        time.sleep(0.3)
    assert Reservation.objects.get().status == "released", (tmp_path / "worker.log").read_text()[-2000:]
    assert ReservationEvent.objects.get().kind == "released"
