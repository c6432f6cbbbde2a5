"""A GPU's health through the API: burn-ins in pages, the history from the simulated agent, the error shape."""

from datetime import timedelta

import pytest

from tests.support.health import REMAP_GPU, XID_GPU, failed_burnin, simulated_node, store_history
from tests.support.reservations import api_client, token_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(gpu_models):
    node, simulator = simulated_node()
    start = store_history(simulator, clean_until_s=600)
    return node, simulator, start


def test_the_health_of_a_gpu_with_a_pending_remap_and_a_failed_burn_in(cast, history):
    node, simulator, start = history
    gpu = node.gpus.get(index=REMAP_GPU)
    failed_burnin(gpu, start + timedelta(seconds=1200))

    body = api_client(token_of(cast["outsider"])).get(f"/api/gpus/{gpu.uuid}/health/").json()

    assert body["memory"]["remap_pending"] == 1 and body["memory"]["remapped_correctable"] == 3
    assert body["memory"]["retired_sbe"] is None  # Ampere retires no pages: N/A, not 0
    assert body["problems"][0].startswith("A memory row remap is pending")
    assert body["problems"][1].startswith("Last burn-in failed") and "46%" in body["problems"][1]
    assert body["last_burnin"]["passed"] is False and body["last_burnin"]["gpu"] == gpu.uuid
    changes = {(c["metric"], c["previous"], c["value"]) for c in body["memory_changes"]}
    assert changes == {("remapped_correctable", 0, 3), ("remapped_uncorrectable", 0, 1), ("remap_pending", 0, 1)}
    assert body["xid_events"] == []


def test_the_xid_gpu_shows_each_error_with_its_code(cast, history):
    node, simulator, start = history
    gpu = node.gpus.get(index=XID_GPU)

    body = api_client(token_of(cast["outsider"])).get(f"/api/gpus/{gpu.uuid}/health/").json()

    assert [event["errors"] for event in body["xid_events"]] == [1, 1, 1]
    assert all(event["code"] in (13, 31, 43) for event in body["xid_events"])
    assert body["problems"] == [] and body["memory_changes"] == [] and body["last_burnin"] is None


def test_burn_ins_come_newest_first_in_pages(cast, history):
    node, _, start = history
    gpu = node.gpus.get(index=0)
    for minutes in range(3):
        failed_burnin(gpu, start + timedelta(minutes=minutes))
    client = api_client(token_of(cast["outsider"]))

    first = client.get(f"/api/gpus/{gpu.uuid}/burnins/?limit=2").json()
    rest = client.get(first["next"]).json()

    assert first["count"] == 3 and len(first["results"]) == 2 and len(rest["results"]) == 1
    times = [r["finished_at"] for r in first["results"] + rest["results"]]
    assert times == sorted(times, reverse=True)


def test_bad_requests_get_the_api_error_shape(cast, history):
    node, _, _ = history
    client = api_client(token_of(cast["outsider"]))
    uuid = node.gpus.first().uuid

    too_long = client.get(f"/api/gpus/{uuid}/health/?days=91")
    unknown = client.get("/api/gpus/GPU-nope/health/")
    bad_page = client.get(f"/api/gpus/{uuid}/burnins/?limit=x")

    assert too_long.status_code == 400 and "days" in too_long.json()["errors"]
    assert unknown.status_code == 404 and unknown.json()["detail"]
    assert bad_page.status_code == 400 and "limit" in bad_page.json()["errors"]
    assert api_client("wrong").get(f"/api/gpus/{uuid}/health/").status_code == 401
