"""Ending a GPU process from the process table: the owner's own, any for an admin, refused (403) to others;
the node worker ends it with a run cancel's grace."""

import subprocess
from datetime import UTC, datetime

import psutil
import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from inventory.models import OsAccount
from monitoring.alerts.choices import ReclaimStatus
from monitoring.processes.models import ProcessStop
from tests.support.gpus import set_state
from tests.support.monitoring import NODE
from tests.support.telemetry import add_gpu, process
from tests.support.workers import wait_for

ME = psutil.Process().username()  # the sleeper runs as whoever runs the tests


@pytest.fixture
def sleeper():
    child = subprocess.Popen(["sleep", "600"])
    yield child
    if child.poll() is None:
        child.kill()
    child.wait()


@pytest.fixture
def gpu_with_sleeper(cast, sleeper, gpu_models):
    """alice's OS account (ME) runs the sleeper on GPU 0 of the test node, as the latest sample says."""
    OsAccount.objects.create(username=ME, user=cast["owner"])
    gpu = add_gpu(NODE, 0)
    real = psutil.Process(sleeper.pid)
    started = datetime.fromtimestamp(real.create_time(), tz=UTC)
    set_state(
        gpu, processes=[process(sleeper.pid, ME, 4096, 0, started, name="sleep", cmdline=" ".join(real.cmdline()))]
    )
    return gpu


def believe_run(gpu, run) -> None:
    """The GPU's process as the ingest stores one whose run it believed."""
    state = gpu.state
    set_state(gpu, processes=[{**state.processes[0], "run": run.pk}, *state.processes[1:]])


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def ask_to_end(user, gpu, pid):
    return api_as(user).post("/api/processes/stop/", {"gpu": gpu.uuid, "pid": pid}, format="json")


@pytest.mark.parametrize("who", ["teammate", "outsider"])
def test_a_researcher_cannot_end_another_researchers_process(cast, gpu_with_sleeper, sleeper, who):
    response = ask_to_end(cast[who], gpu_with_sleeper, sleeper.pid)
    assert response.status_code == 403, response.content
    assert not ProcessStop.objects.exists()
    assert sleeper.poll() is None


def test_the_page_form_refuses_another_researcher_with_403(cast, gpu_with_sleeper, sleeper, client):
    client.force_login(cast["teammate"])
    response = client.post("/processes/stop/", {"gpu": gpu_with_sleeper.uuid, "pid": sleeper.pid})
    assert response.status_code == 403
    assert not ProcessStop.objects.exists()


def test_a_process_that_is_not_reported_is_not_found(cast, gpu_with_sleeper):
    assert ask_to_end(cast["admin"], gpu_with_sleeper, 4_000_000).status_code == 404
    assert api_as(cast["admin"]).post("/api/processes/stop/", {"gpu": "GPU-nope", "pid": 1}).status_code == 404
    assert not ProcessStop.objects.exists()


@pytest.mark.parametrize("pid", [0, -1, "12a", 2**40, "\x00"])
def test_a_bad_pid_is_a_clear_400(cast, gpu_with_sleeper, pid):
    response = ask_to_end(cast["admin"], gpu_with_sleeper, pid)
    assert response.status_code == 400 and "pid" in response.json()["errors"]
    assert not ProcessStop.objects.exists()


def test_asking_twice_makes_one_request(cast, gpu_with_sleeper, sleeper, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        first = ask_to_end(cast["owner"], gpu_with_sleeper, sleeper.pid)
        second = ask_to_end(cast["admin"], gpu_with_sleeper, sleeper.pid)
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"] and ProcessStop.objects.count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("who", ["owner", "admin"])
def test_the_node_worker_ends_the_process_for_its_owner_or_an_admin(
    celery_worker, cast, gpu_with_sleeper, sleeper, who, settings
):
    response = ask_to_end(cast[who], gpu_with_sleeper, sleeper.pid)
    assert response.status_code == 202, response.content
    assert response.json()["grace_s"] == settings.RUN_CANCEL_GRACE_S
    stop = wait_for(lambda: ProcessStop.objects.exclude(status=ReclaimStatus.REQUESTED).first(), what="the stop")
    assert stop.status == ReclaimStatus.TERMINATED, stop.error
    assert sleeper.wait(timeout=10) == -15
    assert (stop.requested_by, stop.owner, stop.os_user) == (cast[who], cast["owner"], ME)
    assert stop.signalled_at and stop.finished_at


def test_a_process_the_fleet_started_belongs_to_its_runs_owner(cast, gpu_with_sleeper, sleeper):
    from training.models import Run

    run = Run.objects.create(owner=cast["teammate"], name="mnist", workload="digits_cnn", strategy="single")
    believe_run(gpu_with_sleeper, run)  # as the ingest stores a process whose run it believed
    response = ask_to_end(cast["owner"], gpu_with_sleeper, sleeper.pid)
    assert response.status_code == 403  # the OS account is alice's, but the run is bob's
    assert not ProcessStop.objects.exists()


def test_a_finished_runs_leftover_process_is_ended_alone(
    cast, gpu_with_sleeper, sleeper, django_capture_on_commit_callbacks
):
    from training.choices import RunStatus
    from training.models import Run

    run = Run.objects.create(owner=cast["owner"], name="done", workload="digits_cnn", strategy="single")
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED, finished_at=timezone.now())
    believe_run(gpu_with_sleeper, run)

    with django_capture_on_commit_callbacks(execute=False):
        response = ask_to_end(cast["owner"], gpu_with_sleeper, sleeper.pid)

    assert response.status_code == 202 and response.json()["run"] is None
    assert response.json()["detail"].startswith("Asked ")
    run.refresh_from_db()
    assert run.cancel_requested_at is None and run.status == RunStatus.SUCCEEDED


def test_a_run_process_that_went_with_its_run_before_the_worker_looked_is_terminated(
    cast, gpu_with_sleeper, sleeper, django_capture_on_commit_callbacks
):
    """The run is asked to stop with the request; when its process is gone by the time the node worker looks,
    it ended as asked (seen in CI as a false "No process with pid … was running")."""
    from monitoring.processes.stopping import end_requested
    from training.models import Run

    run = Run.objects.create(owner=cast["owner"], name="ddp", workload="digits_cnn", strategy="ddp")
    believe_run(gpu_with_sleeper, run)
    with django_capture_on_commit_callbacks(execute=False):
        assert ask_to_end(cast["owner"], gpu_with_sleeper, sleeper.pid).status_code == 202
    sleeper.kill()
    sleeper.wait()  # the run's stop ended it before the task reached the node worker

    stop = ProcessStop.objects.get()
    assert stop.run_id == run.pk
    assert end_requested(stop.pk) == ReclaimStatus.TERMINATED
    stop.refresh_from_db()
    assert (stop.status, stop.error) == (ReclaimStatus.TERMINATED, "")
