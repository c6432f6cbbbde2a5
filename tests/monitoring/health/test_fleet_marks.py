"""The Fleet page and /api/fleet/ mark a GPU whose last burn-in failed or whose memory waits for a remap."""

from datetime import timedelta

import pytest

from monitoring.health.burnin_records import record_burnin
from tests.monitoring.health.test_burnin_verdict import device, finished_burnin
from tests.support.health import REMAP_GPU, XID_GPU, failed_burnin, simulated_node, store_history
from tests.support.reservations import api_client, token_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(gpu_models):
    node, simulator = simulated_node()
    store_history(simulator)
    return node


def health_of(body, uuid):
    return next(gpu["health"] for n in body["nodes"] for gpu in n["gpus"] if gpu["uuid"] == uuid)


def test_the_fleet_marks_a_pending_remap_and_a_failed_burn_in_and_nothing_else(cast, node, client):
    gpus = {gpu.index: gpu for gpu in node.gpus.all()}
    failed_burnin(gpus[XID_GPU], node.last_seen)
    client.force_login(cast["outsider"])

    body = api_client(token_of(cast["outsider"])).get("/api/fleet/").json()
    html = client.get("/fleet/").content.decode()

    assert [m["label"] for m in health_of(body, gpus[REMAP_GPU].uuid)] == ["Remap pending"]
    assert [m["label"] for m in health_of(body, gpus[XID_GPU].uuid)] == ["Burn-in failed"]
    assert all(health_of(body, gpus[i].uuid) == [] for i in gpus if i not in (REMAP_GPU, XID_GPU))
    assert html.count("data-health") == 2
    assert 'title="A memory row remap is pending: reset the GPU to apply it.">Remap pending</span>' in html


def test_a_later_passing_burn_in_clears_the_mark_and_a_failing_check_sets_it(cast, node):
    gpu = node.gpus.get(index=0)
    failed_burnin(gpu, node.last_seen - timedelta(hours=1))
    client = api_client(token_of(cast["outsider"]))

    record_burnin(finished_burnin(cast["admin"], node, [device(0, gflops=15_000.0)], indexes=(0,)))
    assert health_of(client.get("/api/fleet/").json(), gpu.uuid) == []

    record_burnin(finished_burnin(cast["admin"], node, [device(0, gflops=15_000.0, mismatches=2)], indexes=(0,)))
    (mark,) = health_of(client.get("/api/fleet/").json(), gpu.uuid)
    assert mark["label"] == "Burn-in failed" and "2 wrong elements" in mark["why"]
