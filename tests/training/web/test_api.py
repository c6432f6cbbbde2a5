"""The runs API: launch with field errors, visibility, cancel permissions, following metrics and logs."""

import pytest
from rest_framework.test import APIClient

from tests.training.conftest import gpus_of, queued_messages
from training.choices import RunStatus
from training.models import Run, RunLog, RunMetric

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def alice_run(cast):
    return Run.objects.create(
        owner=cast["owner"], project=cast["project"], name="alice-cnn", workload="digits_cnn", strategy="single"
    )


def launch_body(node, **extra):
    body = {"workload": "digits_cnn", "gpus": [gpus_of(node, 1)[0].uuid], "hyperparameters": {"epochs": 2}}
    return {**body, **extra}


def test_a_launch_returns_the_queued_run(api, cast, quiet_node, django_capture_on_commit_callbacks):
    api.force_authenticate(cast["owner"])
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/runs/", launch_body(quiet_node, name="via api", project="vision"), format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "queued" and body["name"] == "via api" and body["project"] == "vision"
    assert body["gpus"][0]["node"] == quiet_node.hostname and body["cost"]["rate_per_hour"] == "0.350"
    assert body["progress"] == {
        "step": None,
        "epoch": None,
        "loss": None,
        "accuracy": None,
        "samples_per_s": None,
        "gflops": None,
    }
    assert queued_messages(quiet_node.hostname) == 1


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ({"hyperparameters": {"lr": -1}}, "lr", "Learning rate must be greater than 0."),
        ({"hyperparameters": {"batch_size": 10**6}}, "batch_size", "larger than the training set"),
        ({"strategy": "ddp", "processes": 4}, "processes", "more than the 1 GPUs"),
        ({"gpus": ["GPU-nowhere"]}, "gpus", "does not exist"),
        ({"workload": "script", "script": "/tmp/x.py"}, "script", "switched off"),
        ({"strategy": "warp"}, "strategy", "not a valid choice"),
        ({"project": "nope"}, "project", "does not exist"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_queued(api, cast, quiet_node, extra, field, message):
    api.force_authenticate(cast["owner"])
    response = api.post("/api/runs/", launch_body(quiet_node, **extra), format="json")
    assert response.status_code == 400
    assert message in " ".join(response.json()["errors"][field])
    assert Run.objects.count() == 0 and queued_messages(quiet_node.hostname) == 0


def test_a_non_object_body_is_a_400(api, cast):
    api.force_authenticate(cast["owner"])
    assert api.post("/api/runs/", [1, 2], format="json").status_code == 400


def test_the_list_holds_only_visible_runs(api, cast, alice_run):
    Run.objects.create(owner=cast["outsider"], name="eve-only", workload="digits_cnn", strategy="single")
    api.force_authenticate(cast["teammate"])
    names = [run["name"] for run in api.get("/api/runs/").json()["results"]]
    assert names == ["alice-cnn"]
    assert api.get("/api/runs/?show=mine").json()["results"] == []


def test_staff_see_every_run(api, cast, alice_run):
    Run.objects.create(owner=cast["outsider"], name="eve-only", workload="digits_cnn", strategy="single")
    api.force_authenticate(cast["admin"])
    assert api.get("/api/runs/").json()["count"] == 2


def test_an_outsider_gets_404_for_a_run_of_another_project(api, cast, alice_run):
    api.force_authenticate(cast["outsider"])
    assert api.get(f"/api/runs/{alice_run.pk}/").status_code == 404
    assert api.post(f"/api/runs/{alice_run.pk}/cancel/").status_code == 404


def test_a_teammate_gets_403_cancelling_someone_elses_run(api, cast, alice_run):
    api.force_authenticate(cast["teammate"])
    response = api.post(f"/api/runs/{alice_run.pk}/cancel/")
    assert response.status_code == 403 and "owner" in response.json()["detail"]
    alice_run.refresh_from_db()
    assert alice_run.status == RunStatus.QUEUED


def test_the_owner_cancels_and_a_second_cancel_is_a_conflict(api, cast, alice_run):
    api.force_authenticate(cast["owner"])
    first = api.post(f"/api/runs/{alice_run.pk}/cancel/")
    second = api.post(f"/api/runs/{alice_run.pk}/cancel/")
    assert first.status_code == 202 and first.json()["status"] == "cancelled"
    assert second.status_code == 409 and "already ended" in second.json()["detail"]


def test_metrics_and_logs_are_followed_with_after(api, cast, alice_run):
    points = [RunMetric.objects.create(run=alice_run, ts=alice_run.created, step=s, loss=1.0 / s) for s in (1, 2, 3)]
    lines = [RunLog.objects.create(run=alice_run, line=f"line {n}") for n in range(3)]
    api.force_authenticate(cast["teammate"])

    metrics = api.get(f"/api/runs/{alice_run.pk}/metrics/?after={points[0].pk}").json()
    logs = api.get(f"/api/runs/{alice_run.pk}/logs/?after={lines[1].pk}").json()

    assert [m["step"] for m in metrics] == [2, 3]
    assert [entry["line"] for entry in logs] == ["line 2"]
    assert api.get(f"/api/runs/{alice_run.pk}/logs/?after=-1").status_code == 400


def test_the_estimate_gives_the_hourly_rate_before_any_history(api, cast, quiet_node):
    api.force_authenticate(cast["owner"])
    body = api.post("/api/runs/estimate/", launch_body(quiet_node), format="json").json()
    assert body == {
        "rate_per_hour": "0.350",
        "seconds": None,
        "cost": None,
        "basis": "no finished run like this one yet",
    }
    assert Run.objects.count() == 0


def test_the_workloads_are_listed_with_their_defaults(api, cast):
    api.force_authenticate(cast["owner"])
    workloads = {w["name"]: w for w in api.get("/api/workloads/").json()["results"]}
    assert workloads["digits_cnn"]["defaults"]["lr"] == 0.002 and "hogwild" in workloads["digits_cnn"]["strategies"]


def test_the_schema_documents_the_runs_api(api, cast):
    api.force_authenticate(cast["owner"])
    schema = api.get("/api/schema/?format=json").json()
    assert {"/api/runs/", "/api/runs/{id}/cancel/", "/api/runs/{id}/metrics/", "/api/sweeps/"} <= set(schema["paths"])
