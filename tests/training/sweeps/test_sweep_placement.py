"""Sweeps use the fleet: k free GPUs of a model (or named GPUs), runs placed as GPUs become free, never on
a GPU someone else uses, never more than k at once; Cancel sweep; more GPUs than exist is refused."""

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from inventory.models import GPU, Node
from tests.support.gpus import set_states
from tests.training.conftest import gpus_of, queued_messages
from training.choices import RunStatus
from training.dispatch.waiting import waiting_for
from training.models import Run, Sweep
from training.sweeps.placing import dispatch, dispatch_all
from training.sweeps.search import SweepRequest, check_sweep, launch_sweep

pytestmark = pytest.mark.django_db


def online(node: Node) -> None:
    Node.objects.filter(pk=node.pk).update(status="online", last_seen=timezone.now())


def hold(gpu: GPU, os_user: str) -> None:
    process = {"pid": 9, "user": os_user, "name": "python", "cmdline": "x", "mem_used_mib": 40_000}
    set_states(GPU.objects.filter(pk=gpu.pk), processes=[process])


def free(gpu: GPU) -> None:
    set_states(GPU.objects.filter(pk=gpu.pk), processes=[])


def sweep_of(user, node, runs: int = 3, **placement) -> Sweep:
    request = SweepRequest(
        user=user, workload="digits_cnn", mode="grid", space={"lr": [0.001, 0.003, 0.01, 0.03][:runs]}, **placement
    )
    plans, errors = check_sweep(request)
    assert errors == {}, errors
    return launch_sweep(request, plans)


def placed(sweep: Sweep) -> dict[int, str]:
    return {run.pk: str(run.gpus.get()) for run in sweep.runs.filter(nodes__isnull=False)}


def test_a_sweep_asking_for_more_gpus_than_exist_is_refused_and_nothing_is_stored(cast, quiet_node):
    model = gpus_of(quiet_node, 1)[0].model
    api = APIClient()
    api.force_authenticate(cast["owner"])
    body = {"workload": "digits_cnn", "mode": "grid", "space": {"lr": [0.1, 0.2]}, "gpu_model": model.name}
    response = api.post("/api/sweeps/", {**body, "gpu_count": 5}, format="json")
    assert response.status_code == 400
    assert f"The fleet has 2 {model.name} GPU(s) a sweep may use; you asked for 5." in str(response.json())
    for bad in (0, -1, 10**30, "two", None):
        assert api.post("/api/sweeps/", {**body, "gpu_count": bad}, format="json").status_code == 400
    assert Sweep.objects.count() == 0 and Run.objects.count() == 0 and queued_messages(quiet_node.hostname) == 0


def test_runs_go_to_free_gpus_of_the_model_at_most_k_at_once(cast, quiet_node, django_capture_on_commit_callbacks):
    online(quiet_node)
    busy, idle = gpus_of(quiet_node, 2)
    hold(busy, "bob")
    with django_capture_on_commit_callbacks(execute=True):
        sweep = sweep_of(cast["owner"], quiet_node, runs=3, gpu_model=busy.model, gpu_count=2)
    # Only one GPU is free: bob's process holds the other. The rest wait, and say so.
    assert list(placed(sweep).values()) == [str(idle)]
    waiting = sweep.runs.filter(nodes__isnull=True).first()
    assert waiting.status == RunStatus.QUEUED and waiting_for(waiting) == "waiting for a free GPU for its sweep"
    assert queued_messages(quiet_node.hostname) == 1

    free(busy)
    with django_capture_on_commit_callbacks(execute=True):
        dispatch_all()
    assert sorted(placed(sweep).values()) == sorted([str(idle), str(busy)])
    with django_capture_on_commit_callbacks(execute=True):
        assert dispatch(sweep.pk) == []  # two at once, as asked
    assert queued_messages(quiet_node.hostname) == 2


def test_a_run_waiting_for_a_gpu_has_its_checkpoint_directory_named_at_launch(cast, quiet_node):
    gpu = gpus_of(quiet_node, 1)[0]
    hold(gpu, "bob")
    sweep = sweep_of(cast["owner"], quiet_node, runs=2, gpu_model=gpu.model, gpu_count=1)
    runs = list(sweep.runs.order_by("pk"))
    assert [run.nodes.exists() for run in runs] == [False, False]  # both wait for a GPU
    assert [run.checkpoint_dir for run in runs] == [f"run-{run.uuid}" for run in runs]


def test_named_gpus_are_used_when_free(client, cast, quiet_node, django_capture_on_commit_callbacks):
    online(quiet_node)
    gpus = gpus_of(quiet_node, 2)
    client.force_login(cast["owner"])
    data = {
        "workload": "digits_cnn",
        "mode": "grid",
        "metric": "accuracy",
        "space_lr": "0.001, 0.003, 0.01",
        "gpus": [gpu.pk for gpu in gpus],
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/sweeps/new/", data)
    sweep = Sweep.objects.get()
    assert response.status_code == 302 and sweep.gpu_count == 2 and list(sweep.pool.all()) == gpus
    assert sorted(placed(sweep).values()) == sorted(str(gpu) for gpu in gpus)
    assert queued_messages(quiet_node.hostname) == 2


def test_an_offline_node_gets_no_sweep_run(cast, quiet_node, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sweep = sweep_of(cast["owner"], quiet_node, runs=2, gpu_model=gpus_of(quiet_node, 1)[0].model, gpu_count=2)
    assert placed(sweep) == {} and queued_messages(quiet_node.hostname) == 0


def test_cancel_sweep_cancels_its_runs_and_places_no_more(cast, quiet_node, django_capture_on_commit_callbacks):
    online(quiet_node)
    with django_capture_on_commit_callbacks(execute=True):
        sweep = sweep_of(cast["owner"], quiet_node, runs=3, gpu_model=gpus_of(quiet_node, 1)[0].model, gpu_count=1)
    api = APIClient()
    api.force_authenticate(cast["outsider"])
    assert api.post(f"/api/sweeps/{sweep.pk}/cancel/").status_code == 404
    api.force_authenticate(cast["teammate"])
    assert api.post(f"/api/sweeps/{sweep.pk}/cancel/").status_code == 403
    api.force_authenticate(cast["owner"])
    response = api.post(f"/api/sweeps/{sweep.pk}/cancel/")
    assert response.status_code == 202 and response.json()["cancelled_at"]
    assert set(sweep.runs.values_list("status", flat=True)) == {RunStatus.CANCELLED}
    assert dispatch(sweep.pk) == []
    assert api.post(f"/api/sweeps/{sweep.pk}/cancel/").status_code == 409


def test_the_sweep_page_offers_cancel_to_its_owner(client, cast, quiet_node, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sweep = sweep_of(cast["owner"], quiet_node, runs=2, gpu_model=gpus_of(quiet_node, 1)[0].model, gpu_count=1)
    client.force_login(cast["owner"])
    page = client.get(f"/sweeps/{sweep.pk}/").content.decode()
    assert "Cancel sweep" in page and f"/ws/sweeps/{sweep.pk}/" in page and ">waiting<" in page
    response = client.post(f"/sweeps/{sweep.pk}/cancel/")
    assert response.status_code == 302
    assert "This sweep was cancelled by alice" in client.get(f"/sweeps/{sweep.pk}/").content.decode()
