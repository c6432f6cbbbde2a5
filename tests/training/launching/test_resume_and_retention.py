"""Resume is the owner's, needs an ended run with a checkpoint, and refuses before anything is queued; a
checkpoint directory lies inside RUN_CHECKPOINT_DIR (retention: test_run_files_retention.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from reservations.models import Reservation
from tests.training.conftest import gpus_of, start_run
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run, RunMetric
from training.run_files import checkpoint_dirs

pytestmark = pytest.mark.django_db


def ended_with_checkpoint(run: Run, step: int = 90, ended_ago: timedelta = timedelta(0)) -> Run:
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.CANCELLED,
        finished_at=timezone.now() - ended_ago,
        checkpoint={"step": step, "bytes": 5, "reason": "stop"},
    )
    path = checkpoint_dirs.run_dir(run)
    path.mkdir(parents=True, exist_ok=True)
    (path / checkpoint_dirs.FILE).write_bytes(b"state")
    for at in (45, 90, 135):
        RunMetric.objects.create(run=run, ts=timezone.now(), step=at, loss=1.0 / at)
    run.refresh_from_db()
    return run


def api_for(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


@pytest.fixture
def ended_run(cast, quiet_node):
    return ended_with_checkpoint(start_run(cast["owner"], gpus_of(quiet_node, 1)))


def test_the_owner_resumes_on_the_same_gpus_with_the_curve_up_to_the_checkpoint(cast, ended_run):
    answer = api_for(cast["owner"]).post(f"/api/runs/{ended_run.pk}/resume/")

    assert answer.status_code == 201, answer.json()
    body = answer.json()
    resumed = Run.objects.get(pk=body["id"])
    assert body["resumed_from"] == ended_run.pk and body["status"] == RunStatus.QUEUED
    assert list(resumed.gpus.all()) == list(ended_run.gpus.all())
    assert list(resumed.metrics.values_list("step", flat=True)) == [45, 90]
    assert resumed.checkpoint_dir == f"run-{resumed.uuid}"  # relative: each host resolves it under its own root
    assert checkpoint_dirs.run_dir(resumed) == checkpoint_dirs.default_dir(resumed)


@pytest.mark.parametrize("who", ["teammate", "admin"])
def test_no_one_but_the_owner_may_resume(cast, ended_run, who):
    answer = api_for(cast[who]).post(f"/api/runs/{ended_run.pk}/resume/")

    assert answer.status_code == 403 and "Only the owner" in answer.json()["detail"]
    assert Run.objects.count() == 1


def test_a_run_without_a_checkpoint_is_refused(cast, ended_run):
    (checkpoint_dirs.run_dir(ended_run) / checkpoint_dirs.FILE).unlink()

    answer = api_for(cast["owner"]).post(f"/api/runs/{ended_run.pk}/resume/")

    assert answer.status_code == 409 and "no checkpoint" in answer.json()["detail"]
    assert Run.objects.count() == 1


def test_a_run_still_going_is_refused(cast, quiet_node):
    run = start_run(cast["owner"], gpus_of(quiet_node, 1))

    answer = api_for(cast["owner"]).post(f"/api/runs/{run.pk}/resume/")

    assert answer.status_code == 409 and "has not ended" in answer.json()["detail"]
    assert Run.objects.count() == 1


def test_gpus_someone_else_booked_meanwhile_refuse_the_resume_by_field(cast, ended_run):
    start = timezone.now() - timedelta(minutes=1)
    Reservation.objects.create(
        user=cast["teammate"], gpu=ended_run.gpus.get(), start=start, end=start + timedelta(hours=3)
    )

    answer = api_for(cast["owner"]).post(f"/api/runs/{ended_run.pk}/resume/")

    assert answer.status_code == 400 and answer.json()["errors"]["gpus"]
    assert Run.objects.count() == 1


@pytest.mark.parametrize("requested", ["../elsewhere", "/etc", "a/../../b", ".", "x\x00y"])
def test_a_checkpoint_directory_outside_the_root_is_refused_at_launch(cast, quiet_node, requested):
    request = LaunchRequest(
        user=cast["owner"], workload="digits_cnn", gpus=gpus_of(quiet_node, 1), checkpoint_dir=requested
    )
    plan, errors = check_launch(request)

    assert plan is None and "checkpoint_dir" in errors


def test_the_api_refuses_a_checkpoint_directory_outside_the_root_and_stores_one_inside(cast, quiet_node):
    api = api_for(cast["owner"])
    launch = {"workload": "digits_cnn", "gpus": [quiet_node.gpus.first().uuid]}

    refused = api.post("/api/runs/", {**launch, "checkpoint_dir": "../../tmp"}, format="json")
    stored = api.post("/api/runs/", {**launch, "checkpoint_dir": "alice/exp-1"}, format="json")

    assert refused.status_code == 400 and "RUN_CHECKPOINT_DIR" in refused.json()["errors"]["checkpoint_dir"][0]
    assert stored.status_code == 201, stored.json()
    assert stored.json()["checkpoint"]["directory"] == str(checkpoint_dirs.root() / "alice" / "exp-1")
    assert Run.objects.count() == 1


def test_the_run_page_shows_the_checkpoint_size_and_offers_resume_to_the_owner_only(client, cast, ended_run):
    client.force_login(cast["owner"])
    mine = client.get(f"/runs/{ended_run.pk}/").content.decode()
    client.force_login(cast["teammate"])
    theirs = client.get(f"/runs/{ended_run.pk}/").content.decode()

    assert "5\xa0bytes at step 90, saved as it stopped" in mine and 'id="resume-form"' in mine
    assert "5\xa0bytes at step 90" in theirs and 'id="resume-form"' not in theirs


def test_the_resume_button_opens_the_new_run(client, cast, ended_run):
    client.force_login(cast["owner"])
    response = client.post(f"/runs/{ended_run.pk}/resume/")

    resumed = Run.objects.get(resumed_from=ended_run)
    assert response.status_code == 302 and response.url == f"/runs/{resumed.pk}/"
    assert f'href="/runs/{ended_run.pk}/">#{ended_run.pk}</a>' in client.get(response.url).content.decode()


def test_a_burn_in_is_a_measurement_and_is_never_resumed(cast, quiet_node):
    request = LaunchRequest(
        user=cast["owner"], workload="burnin", gpus=gpus_of(quiet_node, 1), hyperparameters={"iterations": 5}
    )
    plan, errors = check_launch(request)
    assert not errors, errors
    burnin = ended_with_checkpoint(launch(plan))  # even with a file in its checkpoint directory

    answer = api_for(cast["owner"]).post(f"/api/runs/{burnin.pk}/resume/")

    assert answer.status_code == 409 and "A burn-in is a measurement" in answer.json()["detail"]
    assert Run.objects.count() == 1


def test_a_command_run_resumes_with_its_command_environment_and_variables(cast, quiet_node):
    fields = dict(shell_line="python train.py --resume", workdir="/srv/lab", variables={"MODE": "x"}, setup="true")
    plan, errors = check_launch(
        LaunchRequest(user=cast["owner"], workload="command", gpus=gpus_of(quiet_node, 1), **fields)
    )
    assert not errors, errors
    ended = ended_with_checkpoint(launch(plan))

    answer = api_for(cast["owner"]).post(f"/api/runs/{ended.pk}/resume/")

    assert answer.status_code == 201, answer.json()
    resumed = Run.objects.get(pk=answer.json()["id"])
    assert {name: getattr(resumed, name) for name in fields} == fields
    assert (resumed.workload, resumed.command, resumed.env_kind) == ("command", [], "fleet")
