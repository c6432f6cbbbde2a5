"""An admin burns in a GPU or a node from its page, the Django admin or the API: one queued `burnin` run per GPU
through the launch path; researchers are refused, and a GPU that is not free is refused by name with nothing queued.

Tests here run in a transaction that is rolled back, so no run is sent to a broker: they stay queued.
"""

import pytest
from django.urls import reverse
from django.utils import timezone

from inventory.models import GPU, GPUModel, Node, OsAccount
from monitoring.health.burnin_launch import burn_in
from monitoring.health.views import queued_message
from tests.support.gpus import set_states
from tests.support.reservations import api_client, booked, token_of
from training.choices import RunStatus
from training.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(gpu_models):
    node = Node.objects.create(hostname="gpu-burn-07", status="online", cpu_count=8)
    t4 = GPUModel.objects.get(name="T4")
    for index in range(2):
        GPU.objects.create(node=node, index=index, uuid=f"GPU-burn-07-{index}", model=t4)
    return node


@pytest.fixture
def root(cast):
    return api_client(token_of(cast["admin"]))


def gpu(node, index: int) -> GPU:
    return node.gpus.select_related("node").get(index=index)


def hold_memory(gpu: GPU, os_user: str = "bob", mib: int = 20_000) -> None:
    process = {"pid": 4242, "user": os_user, "name": "python", "cmdline": "python train.py", "mem_used_mib": mib}
    set_states(GPU.objects.filter(pk=gpu.pk), processes=[{**process, "sm_util": 90.0, "started_at": 1.0e9}])


def test_an_admin_burns_in_a_gpu_through_the_api_as_one_queued_single_process_run(root, node, cast):
    response = root.post(f"/api/gpus/{gpu(node, 1).uuid}/burnin/")

    assert response.status_code == 201, response.content
    (body,) = response.json()["runs"]
    run = Run.objects.get(pk=body["id"])
    assert (run.workload, run.strategy, run.processes, run.status) == ("burnin", "single", 1, RunStatus.QUEUED)
    assert run.owner == cast["admin"] and list(run.gpus.all()) == [gpu(node, 1)]
    assert [share.gpu_indexes for share in run.nodes.all()] == [[1]]
    assert body["url"] == reverse("training:run", args=[run.pk]) and body["gpus"][0]["uuid"] == gpu(node, 1).uuid


def test_a_node_burn_in_queues_one_run_per_gpu_in_index_order(root, node):
    response = root.post(f"/api/nodes/{node.hostname}/burnin/")

    assert response.status_code == 201, response.content
    runs = [Run.objects.get(pk=body["id"]) for body in response.json()["runs"]]
    assert [[g.index for g in run.gpus.all()] for run in runs] == [[0], [1]]
    assert {run.name for run in runs} == {"burn-in gpu-burn-07:0", "burn-in gpu-burn-07:1"}


@pytest.mark.parametrize("who", ["owner", "outsider"])
def test_a_researcher_gets_403_from_both_endpoints_and_nothing_is_queued(cast, node, who):
    api = api_client(token_of(cast[who]))

    for url in (f"/api/gpus/{gpu(node, 0).uuid}/burnin/", f"/api/nodes/{node.hostname}/burnin/"):
        response = api.post(url)
        assert response.status_code == 403 and response.json()["detail"], (url, response.content)
    assert not Run.objects.exists()


def test_a_gpu_someone_else_holds_is_refused_by_name_and_its_node_burn_in_queues_nothing(root, node):
    hold_memory(gpu(node, 1))

    one = root.post(f"/api/gpus/{gpu(node, 1).uuid}/burnin/")
    whole = root.post(f"/api/nodes/{node.hostname}/burnin/")

    for response in (one, whole):
        assert response.status_code == 409, response.content
        body = response.json()
        assert body["detail"] == "gpu-burn-07:1 is in use by bob (processes holding its memory now)."
        assert body["errors"] == {"gpus": [body["detail"]]}
    assert not Run.objects.exists()
    assert root.post(f"/api/gpus/{gpu(node, 0).uuid}/burnin/").status_code == 201  # its free neighbour may


def test_the_admins_own_process_does_not_make_a_gpu_busy_for_them(root, node, cast):
    OsAccount.objects.create(username="root-os", user=cast["admin"])
    hold_memory(gpu(node, 0), os_user="root-os")

    assert root.post(f"/api/gpus/{gpu(node, 0).uuid}/burnin/").status_code == 201


def test_a_gpu_booked_by_someone_else_or_on_an_offline_node_is_refused_by_name(root, node, cast, settings):
    settings.RUN_BOOKING_HORIZON_S = 3 * 3600  # the booking below starts within the next hour
    booked(cast["owner"], [gpu(node, 0)], 0, 1)

    booking = root.post(f"/api/gpus/{gpu(node, 0).uuid}/burnin/").json()["detail"]
    Node.objects.filter(pk=node.pk).update(status="offline")
    offline = root.post(f"/api/nodes/{node.hostname}/burnin/").json()["errors"]["gpus"]

    assert booking.startswith("gpu-burn-07:0 is booked by alice from ")
    assert offline[:2] == ["gpu-burn-07:0 is on a node that is offline.", booking]
    assert offline[2] == "gpu-burn-07:1 is on a node that is offline."
    assert not Run.objects.exists()


def test_a_second_burn_in_of_a_gpu_while_the_first_is_under_way_is_refused(root, node):
    first = root.post(f"/api/gpus/{gpu(node, 0).uuid}/burnin/").json()["runs"][0]["id"]

    again = root.post(f"/api/nodes/{node.hostname}/burnin/")

    assert again.status_code == 409
    assert again.json()["detail"] == f"gpu-burn-07:0 already has a burn-in under way (run #{first})."
    Run.objects.filter(pk=first).update(status=RunStatus.SUCCEEDED, finished_at=timezone.now())
    assert root.post(f"/api/gpus/{gpu(node, 0).uuid}/burnin/").status_code == 201


def test_unknown_gpus_and_nodes_are_404(root):
    assert root.post("/api/gpus/GPU-nope/burnin/").status_code == 404
    assert root.post("/api/nodes/nope/burnin/").status_code == 404


def test_the_gpu_page_button_is_for_admins_and_leaves_a_message_linking_the_run(client, cast, node):
    target = gpu(node, 0)
    page = reverse("fleet:gpu", args=[target.uuid])
    client.force_login(cast["owner"])
    assert "data-burnin" not in client.get(page).content.decode()
    assert client.post(reverse("monitoring:gpu_burnin", args=[target.uuid])).status_code == 403

    client.force_login(cast["admin"])
    assert 'action="/fleet/gpus/GPU-burn-07-0/burnin/"' in client.get(page).content.decode()
    html = client.post(reverse("monitoring:gpu_burnin", args=[target.uuid]), follow=True).content.decode()

    run = Run.objects.get()
    assert f'Burn-in queued on gpu-burn-07:0 (<a href="/runs/{run.pk}/">run #{run.pk}</a>)' in html


def test_the_node_page_button_refuses_a_busy_gpu_with_its_name(client, cast, node):
    hold_memory(gpu(node, 1))
    client.force_login(cast["admin"])
    assert "Burn in this node" in client.get(reverse("fleet:node", args=[node.hostname])).content.decode()

    html = client.post(reverse("monitoring:node_burnin", args=[node.hostname]), follow=True).content.decode()

    assert "No burn-in was queued. gpu-burn-07:1 is in use by bob" in html
    assert not Run.objects.exists()


def test_the_django_admin_actions_burn_in_selected_gpus_and_nodes(client, cast, node, gpu_models):
    other = Node.objects.create(hostname="gpu-burn-08", status="online", cpu_count=8)
    GPU.objects.create(node=other, index=0, uuid="GPU-burn-08-0", model=GPUModel.objects.get(name="T4"))
    client.force_login(cast["admin"])

    picked = {"action": "burn_in_gpus", "_selected_action": [gpu(node, 1).pk]}
    html = client.post(reverse("admin:fleet_gpu_changelist"), picked, follow=True).content.decode()
    assert "Burn-in queued on gpu-burn-07:1" in html
    nodes = {"action": "burn_in_nodes", "_selected_action": [node.pk, other.pk]}
    html = client.post(reverse("admin:fleet_node_changelist"), nodes, follow=True).content.decode()

    assert "No burn-in was queued. gpu-burn-07:1 already has a burn-in under way" in html
    Run.objects.update(status=RunStatus.CANCELLED, finished_at=timezone.now())
    html = client.post(reverse("admin:fleet_node_changelist"), nodes, follow=True).content.decode()
    assert "Burn-ins queued on gpu-burn-07:0 (" in html and "gpu-burn-07:1 (" in html and "gpu-burn-08:0 (" in html
    assert Run.objects.filter(status=RunStatus.QUEUED, workload="burnin").count() == 3


def test_the_queued_message_names_every_runs_gpu_in_one_query(cast, node, django_assert_num_queries):
    runs = burn_in(cast["admin"], node.gpus.select_related("node"))

    with django_assert_num_queries(1):
        message = queued_message(runs)
    assert message.startswith(
        f'Burn-ins queued on gpu-burn-07:0 (<a href="/runs/{runs[0].pk}/">run #{runs[0].pk}</a>), '
        f'gpu-burn-07:1 (<a href="/runs/{runs[1].pk}/">run #{runs[1].pk}</a>).'
    )
