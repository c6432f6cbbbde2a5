"""A run's artifacts: a real run keeps its final model and metrics per step; who may download them; retention."""

import csv
import io
from datetime import timedelta

import pytest
import torch
from django.utils import timezone
from rest_framework.test import APIClient

from tests.training.conftest import gpus_of, log_of, start_run, wait_for
from training.choices import RunStatus
from training.models import Run, RunArtifact
from training.run_files.artifacts import stored_path
from training.run_files.retention import delete_expired_run_files
from training.workloads import digits_cnn

pytestmark = pytest.mark.django_db(transaction=True)


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_a_finished_run_keeps_its_model_and_every_steps_metrics(cast, worker_node, client):
    run = start_run(cast["owner"], gpus_of(worker_node, 1), epochs=2)
    Run.objects.filter(pk=run.pk).update(project=cast["project"])

    run = wait_for(run, RunStatus.finished())

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    kept = {artifact.name: artifact for artifact in run.artifacts.all()}
    assert set(kept) == {"model.pt", "metrics.csv"}
    client.force_login(cast["teammate"])  # a project member, as the run's permissions say
    rows = list(csv.DictReader(io.StringIO(body(client.get(f"/runs/{run.pk}/artifacts/metrics.csv/")).decode())))
    assert [int(row["step"]) for row in rows] == list(range(1, run.result["steps"] + 1))
    assert all(float(row["loss"]) > 0 for row in rows)
    epoch_ends = [row for row in rows if row["held_out_accuracy"]]
    assert [int(row["epoch"]) for row in epoch_ends] == [1, 2]
    assert float(epoch_ends[-1]["held_out_accuracy"]) == pytest.approx(run.result["accuracy"], abs=1e-4)
    download = client.get(f"/runs/{run.pk}/artifacts/model.pt/")
    assert download["Content-Disposition"] == f'attachment; filename="run-{run.pk}-model.pt"'
    state = torch.load(io.BytesIO(body(download)), weights_only=True)
    digits_cnn.build_model(None).load_state_dict(state)  # every weight of the trained network, nothing else
    assert kept["model.pt"].size_bytes == stored_path(kept["model.pt"]).stat().st_size
    page = client.get(f"/runs/{run.pk}/").content.decode().split('id="artifacts"')[1].split("</section>")[0]
    assert f"/runs/{run.pk}/artifacts/model.pt/" in page and "Kept until" in page


@pytest.fixture
def kept_run(cast, tmp_path, settings):
    """A finished run of alice's with one artifact on disk."""
    settings.RUN_ARTIFACT_DIR = tmp_path
    run = Run.objects.create(
        owner=cast["owner"],
        project=cast["project"],
        name="old",
        workload="digits_cnn",
        strategy="single",
        status=RunStatus.SUCCEEDED,
        finished_at=timezone.now() - timedelta(days=1),
    )
    (tmp_path / f"run-{run.pk}").mkdir()
    (tmp_path / f"run-{run.pk}" / "metrics.csv").write_text("step\n1\n")
    RunArtifact.objects.create(
        run=run, name="metrics.csv", kind="metrics", path=f"run-{run.pk}/metrics.csv", size_bytes=7
    )
    return run


def test_an_outsider_gets_404_from_the_page_and_the_api(cast, kept_run, client):
    client.force_login(cast["outsider"])
    assert client.get(f"/runs/{kept_run.pk}/artifacts/metrics.csv/").status_code == 404
    api = APIClient()
    api.force_authenticate(cast["outsider"])
    answer = api.get(f"/api/runs/{kept_run.pk}/artifacts/metrics.csv/")
    assert answer.status_code == 404 and "step" not in answer.content.decode()


@pytest.mark.parametrize("who", ["owner", "teammate", "admin"])
def test_who_may_see_the_run_downloads_through_the_api(cast, kept_run, who):
    api = APIClient()
    api.force_authenticate(cast[who])
    listed = api.get(f"/api/runs/{kept_run.pk}/").json()["artifacts"]
    assert [(a["name"], a["kind"], a["size_bytes"]) for a in listed] == [("metrics.csv", "metrics", 7)]
    assert body(api.get(listed[0]["download"])) == b"step\n1\n"


def test_a_wrong_name_is_a_404_that_says_so(cast, kept_run):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    missing = api.get(f"/api/runs/{kept_run.pk}/artifacts/model.pt/")
    assert missing.status_code == 404 and "no artifact named 'model.pt'" in missing.json()["detail"]
    assert api.get(f"/api/runs/{kept_run.pk}/artifacts/..%2Fsecret/").status_code == 404


def test_retention_deletes_files_of_runs_that_ended_long_enough_ago(cast, kept_run, settings):
    settings.RUN_FILES_RETENTION_DAYS = 2
    path = stored_path(kept_run.artifacts.get())

    assert delete_expired_run_files().artifacts == 0 and path.exists()
    assert delete_expired_run_files(now=timezone.now() + timedelta(days=1, hours=1)).artifacts == 1

    assert not path.exists() and not path.parent.exists() and not kept_run.artifacts.exists()
    assert Run.objects.filter(pk=kept_run.pk).exists()  # the run and its history stay


def test_deleting_a_run_deletes_its_files(cast, kept_run):
    path = stored_path(kept_run.artifacts.get())
    kept_run.delete()
    assert not path.exists()


@pytest.mark.parametrize("field", ["save", "metrics_csv"])
def test_a_launch_cannot_choose_where_files_are_written(cast, quiet_node, field):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    body = {"workload": "digits_cnn", "gpus": [gpus_of(quiet_node, 1)[0].uuid], "hyperparameters": {field: "/etc/x"}}

    answer = api.post("/api/runs/", body, format="json")

    assert answer.status_code == 400 and f"takes no parameter '{field}'" in answer.json()["errors"][field][0]
    assert not Run.objects.exists()
