"""/api/fleet/ and /api/gpus/<uuid>/: the fleet's latest state, as the live pages get it."""

import pytest

from tests.monitoring.live.conftest import make_fleet


@pytest.fixture
def fleet(db):
    return make_fleet()


def test_it_lists_every_node_with_its_gpus_and_their_latest_state(client, cast, fleet):
    client.force_login(cast["outsider"])
    body = client.get("/api/fleet/").json()
    assert [node["hostname"] for node in body["nodes"]] == ["gpu-01", "gpu-02"]
    online, offline = body["nodes"]
    assert (online["status"], online["colour"], offline["status"]) == ("online", "green", "offline")
    busy, idle = online["gpus"]
    assert busy["util_gpu"] == 97 and busy["band"] == "full" and busy["model"] == "H100 SXM"
    assert busy["processes"][0] == {
        "pid": 4242,
        "user": "alice",
        "owner": "alice",
        "name": "python",
        "cmdline": "python train.py",
        "mem_used_mib": 59000.0,
        "sm_util": 95.0,
        "started_at": 1794990000.0,
        "run": None,
        "unverified_run": None,
    }
    assert idle["band"] == "idle" and idle["users"] == []
    assert body["summary"]["busy"] == 1 and body["summary"]["offline"] == 1


def test_a_gpu_that_never_reported_has_nulls_not_zeros(client, cast, fleet):
    client.force_login(cast["owner"])
    silent = client.get("/api/fleet/").json()["nodes"][1]["gpus"][0]
    for key in ("ts", "util_gpu", "mem_used_mib", "memory_total_mib", "temp_c", "power_w", "model", "fan_pct"):
        assert silent[key] is None, key
    assert silent["band"] == "unknown" and silent["throttle"] == [] and silent["processes"] == []


def test_the_api_and_the_live_updates_share_one_serializer(client, cast, fleet):
    from monitoring.live.fanout import update_message
    from tests.monitoring.live.conftest import decoded, gpu_update

    client.force_login(cast["owner"])
    api_gpu = client.get("/api/gpus/GPU-live-0/").json()
    live_gpu = decoded(update_message([gpu_update(ts=api_gpu["ts"])], {}, {"alice": "alice"}))["gpus"][0]
    assert {key: api_gpu[key] for key in live_gpu} == live_gpu


def test_one_gpu_is_found_by_uuid(client, cast, fleet):
    client.force_login(cast["owner"])
    assert client.get("/api/gpus/GPU-live-1/").json()["node"] == "gpu-01"
    missing = client.get("/api/gpus/GPU-nope/")
    assert missing.status_code == 404 and "detail" in missing.json()


def test_a_token_works_as_well_as_a_session(client, cast, fleet):
    from tests.support.reservations import token_of

    token = token_of(cast["owner"])
    response = client.get("/api/fleet/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200


def test_the_fleet_api_is_in_the_schema(client, cast):
    client.force_login(cast["owner"])
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert {"/api/fleet/", "/api/gpus/{uuid}/", "/api/gpus/{uuid}/series/"} <= set(schema["paths"])
    assert "band" in schema["components"]["schemas"]["GPU"]["properties"]
