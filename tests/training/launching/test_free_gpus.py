"""One meaning of "free": launch, its API, Find GPUs and the launch form never offer or accept a GPU
whose memory someone else's process holds (unless an admin overrides, and then it is recorded)."""

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from inventory.models import GPU, Node
from reservations.availability import free_gpus, unfree
from reservations.finder import find_slots
from tests.support.gpus import set_states
from tests.training.conftest import gpus_of, queued_messages
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run

pytestmark = pytest.mark.django_db

BIG = 35 * 1024  # MiB, as the researchers found on GPUs offered as free


def hold(gpu: GPU, os_user: str, mem_mib: float | None = BIG) -> None:
    process = {"pid": 4242, "user": os_user, "name": "python", "cmdline": "python train.py", "mem_used_mib": mem_mib}
    set_states(GPU.objects.filter(pk=gpu.pk), processes=[process], util_gpu=99, last_sample_at=timezone.now())
    gpu.refresh_from_db()


def online(node: Node) -> Node:
    Node.objects.filter(pk=node.pk).update(status="online", last_seen=timezone.now())
    node.refresh_from_db()
    return node


def check(user, gpus, **fields):
    request = LaunchRequest(user=user, workload="digits_cnn", gpus=list(gpus), hyperparameters={"epochs": 2}, **fields)
    return check_launch(request)


def test_a_gpu_someone_elses_process_holds_is_not_free(cast, quiet_node):
    online(quiet_node)
    busy, idle = gpus_of(quiet_node, 2)
    hold(busy, "bob")
    now = timezone.now()
    assert free_gpus(gpus_of(quiet_node), cast["owner"], now, now) == [idle]
    assert unfree([busy], cast["owner"], now, now)[busy.pk].in_use_by == ["bob"]
    # For bob himself it is free: it is his own process.
    assert free_gpus(gpus_of(quiet_node), cast["teammate"], now, now) == [busy, idle]


def test_below_the_threshold_a_process_does_not_take_the_gpu(cast, quiet_node, settings):
    settings.FREE_GPU_FOREIGN_MEMORY_MIB = 1024
    online(quiet_node)
    gpu = gpus_of(quiet_node, 1)[0]
    hold(gpu, "bob", mem_mib=512)
    now = timezone.now()
    assert free_gpus([gpu], cast["owner"], now, now) == [gpu]
    hold(gpu, "bob", mem_mib=None)  # not known is not zero: it counts as holding
    assert free_gpus([gpu], cast["owner"], now, now) == []


def test_an_offline_node_is_not_free(cast, quiet_node):
    gpu = gpus_of(quiet_node, 1)[0]
    now = timezone.now()
    assert unfree([gpu], cast["owner"], now, now)[gpu.pk].offline


def test_launching_on_a_gpu_someone_else_uses_is_refused_naming_them(cast, quiet_node):
    gpu = gpus_of(quiet_node, 1)[0]
    hold(gpu, "bob")
    plan, errors = check(cast["owner"], [gpu])
    assert plan is None and f"{gpu} is in use by bob" in errors["gpus"]
    assert Run.objects.count() == 0 and queued_messages(quiet_node.hostname) == 0


def test_an_unknown_os_user_is_named_as_such(cast, quiet_node):
    gpu = gpus_of(quiet_node, 1)[0]
    hold(gpu, "mallory")
    _, errors = check(cast["owner"], [gpu])
    assert "in use by OS user mallory" in errors["gpus"]


def test_a_researcher_may_launch_over_their_own_process(cast, quiet_node):
    gpu = gpus_of(quiet_node, 1)[0]
    hold(gpu, "alice")
    plan, errors = check(cast["owner"], [gpu])
    assert errors == {} and plan.gpus == [gpu]


def test_only_an_admin_may_override_and_the_override_is_recorded(cast, quiet_node, django_capture_on_commit_callbacks):
    gpu = gpus_of(quiet_node, 1)[0]
    hold(gpu, "bob")
    _, errors = check(cast["owner"], [gpu], override=True)
    assert "Only an admin" in errors["override"] and "in use by bob" in errors["gpus"]

    plan, errors = check(cast["admin"], [gpu], override=True)
    assert errors == {}
    with django_capture_on_commit_callbacks(execute=True):
        run = launch(plan)
    run.refresh_from_db()
    assert run.override.startswith("Launched by root over:") and "in use by bob" in run.override


def test_the_api_refuses_with_the_reason_and_shows_an_override(cast, quiet_node, django_capture_on_commit_callbacks):
    gpu = gpus_of(quiet_node, 1)[0]
    hold(gpu, "bob")
    api = APIClient()
    api.force_authenticate(cast["owner"])
    body = {"workload": "digits_cnn", "gpus": [gpu.uuid], "hyperparameters": {"epochs": 1}}
    response = api.post("/api/runs/", body, format="json")
    assert response.status_code == 400 and "in use by bob" in str(response.json())
    assert Run.objects.count() == 0

    api.force_authenticate(cast["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/runs/", {**body, "override": True}, format="json")
    assert response.status_code == 201, response.json()
    assert "in use by bob" in response.json()["override"]


def test_find_gpus_does_not_offer_a_gpu_in_use_now(cast, quiet_node):
    online(quiet_node)
    busy, idle = gpus_of(quiet_node, 2)
    hold(busy, "bob")
    slot = find_slots(busy.model, 1, 1, timezone.now(), user=cast["owner"])[0]
    assert slot.gpus == [idle]
    # Both GPUs of the node now: not while bob holds one (and no later window is known to free it).
    assert find_slots(busy.model, 2, 1, timezone.now(), node=quiet_node, user=cast["owner"]) == []


def test_the_launch_form_marks_a_gpu_in_use_by_someone_else(client, cast, quiet_node):
    online(quiet_node)
    busy, _ = gpus_of(quiet_node, 2)
    hold(busy, "bob")
    client.force_login(cast["owner"])
    body = client.get("/runs/new/").content.decode()
    assert "in use by bob" in body and 'data-free="0"' in body and 'data-free="1"' in body
