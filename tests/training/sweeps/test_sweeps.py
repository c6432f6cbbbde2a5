"""Sweeps: a grid or random search becomes N runs spread over the GPUs at hand, ranked by their metric."""

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from inventory.models import Node
from tests.training.conftest import gpus_of, queued_messages
from training.choices import RunStatus
from training.models import Run, Sweep
from training.sweeps.search import expand, parse_values

pytestmark = pytest.mark.django_db


def test_a_grid_is_every_combination():
    combos = expand("grid", {"lr": [0.001, 0.01], "batch_size": [16, 32, 64]}, None, 0)
    assert len(combos) == 6
    assert {"lr": 0.01, "batch_size": 64} in combos


def test_a_random_search_draws_reproducibly_within_its_ranges():
    space = {"lr": {"min": 1e-4, "max": 1e-2}, "batch_size": [16, 32], "epochs": {"min": 2, "max": 5}}
    first, again = expand("random", space, 20, 7), expand("random", space, 20, 7)
    assert first == again and len(first) == 20
    assert all(1e-4 <= c["lr"] <= 1e-2 and c["batch_size"] in (16, 32) and 2 <= c["epochs"] <= 5 for c in first)
    assert all(isinstance(c["epochs"], int) for c in first)


@pytest.mark.parametrize(
    ("mode", "space", "samples", "message"),
    [
        ("grid", {"lr": {"min": 0.1, "max": 1}}, None, "needs a list"),
        ("random", {"lr": [0.1]}, None, "number of samples"),
        ("random", {"lr": {"min": 1, "max": 0.1}}, 3, "smaller first"),
        ("random", {"lr": {"min": 0, "max": 0.1}}, 3, "above 0"),
        ("spiral", {"lr": [0.1]}, None, "Unknown search mode"),
    ],
)
def test_a_bad_space_is_refused_with_a_reason(mode, space, samples, message):
    with pytest.raises(ValueError, match=message):
        expand(mode, space, samples, 0)


def test_form_text_becomes_lists_and_ranges():
    assert parse_values("0.001, 0.01") == [0.001, 0.01]
    assert parse_values("1e-4..1e-2") == {"min": 1e-4, "max": 1e-2}
    assert parse_values("adam, sgd") == ["adam", "sgd"]


def test_the_sweep_form_makes_one_run_per_combination_and_starts_as_many_as_it_has_gpus(
    client, cast, quiet_node, django_capture_on_commit_callbacks
):
    Node.objects.filter(pk=quiet_node.pk).update(status="online", last_seen=timezone.now())
    gpus = gpus_of(quiet_node, 2)
    client.force_login(cast["owner"])
    data = {
        "workload": "digits_cnn",
        "mode": "grid",
        "metric": "accuracy",
        "space_lr": "0.001, 0.003, 0.01",
        "space_epochs": "2",
        "gpus": [gpu.pk for gpu in gpus],
        "name": "lr scan",
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/sweeps/new/", data)

    sweep = Sweep.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/sweeps/{sweep.pk}/"
    runs = list(sweep.runs.order_by("pk"))
    assert [run.hyperparameters["lr"] for run in runs] == [0.001, 0.003, 0.01]
    assert all(run.hyperparameters["epochs"] == 2 and run.strategy == "single" for run in runs)
    assert [[gpu.index for gpu in run.gpus.all()] for run in runs] == [[0], [1], []]  # the third waits for a GPU
    assert [run.name for run in runs] == ["lr scan #1", "lr scan #2", "lr scan #3"]
    assert queued_messages(quiet_node.hostname) == 2


def test_a_sweep_with_one_bad_combination_starts_nothing(client, cast, quiet_node):
    client.force_login(cast["owner"])
    data = {
        "workload": "digits_cnn",
        "mode": "grid",
        "metric": "accuracy",
        "space_lr": "0.01, -1",
        "gpus": [gpus_of(quiet_node, 1)[0].pk],
    }
    body = client.post("/sweeps/new/", data).content.decode()
    assert "Run 2 (lr=-1): Learning rate must be greater than 0." in body
    assert Run.objects.count() == 0 and Sweep.objects.count() == 0


def test_a_sweep_larger_than_the_limit_is_refused(cast, quiet_node, settings):
    settings.RUN_SWEEP_MAX_RUNS = 4
    api = APIClient()
    api.force_authenticate(cast["owner"])
    body = {
        "workload": "digits_cnn",
        "mode": "grid",
        "space": {"lr": [0.1, 0.2, 0.3], "seed": [1, 2]},
        "gpus": [gpus_of(quiet_node, 1)[0].uuid],
    }
    response = api.post("/api/sweeps/", body, format="json")
    assert response.status_code == 400 and "6 runs" in response.json()["errors"]["space"][0]


def test_results_are_ranked_best_first_and_unfinished_runs_last(client, cast, quiet_node):
    sweep = Sweep.objects.create(
        owner=cast["owner"],
        project=cast["project"],
        name="s",
        workload="digits_cnn",
        mode="grid",
        space={"lr": [0.1, 0.01, 0.001]},
    )
    for lr, accuracy in [(0.1, 0.91), (0.01, 0.97), (0.001, None)]:
        run = Run.objects.create(
            owner=cast["owner"],
            sweep=sweep,
            name=f"lr {lr}",
            workload="digits_cnn",
            strategy="single",
            hyperparameters={"lr": lr},
        )
        if accuracy is not None:
            run.start()
            run.finish(RunStatus.SUCCEEDED)
            Run.objects.filter(pk=run.pk).update(result={"accuracy": accuracy})
    client.force_login(cast["teammate"])

    api = APIClient()
    api.force_authenticate(cast["teammate"])
    ranked = api.get(f"/api/sweeps/{sweep.pk}/").json()["runs"]
    page = client.get(f"/sweeps/{sweep.pk}/").content.decode()

    assert [(r["hyperparameters"]["lr"], r["metric"]) for r in ranked] == [(0.01, 0.97), (0.1, 0.91), (0.001, None)]
    assert page.index("lr 0.01") < page.index("lr 0.1<") < page.index("lr 0.001")
    assert "97.00 %" in page and "parcoords" in page


def test_an_outsider_cannot_see_a_sweep(client, cast):
    sweep = Sweep.objects.create(
        owner=cast["owner"], project=cast["project"], name="s", workload="digits_cnn", mode="grid", space={"lr": [0.1]}
    )
    client.force_login(cast["outsider"])
    assert client.get(f"/sweeps/{sweep.pk}/").status_code == 404
