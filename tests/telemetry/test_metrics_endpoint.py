"""/metrics: dcgm-exporter's names and labels from the latest GPU state, behind a bearer token or a staff login."""

import re
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from fleet.choices import NodeStatus
from fleet.models import GPU, Node

pytestmark = pytest.mark.django_db

TOKEN = "scrape-me-please"
LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> dict:
    """{(name, gpu UUID or Hostname): value}, checking HELP and TYPE come first for each family."""
    found, declared = {}, set()
    for line in text.strip().splitlines():
        if line.startswith("# TYPE "):
            declared.add(line.split()[2])
            continue
        if line.startswith("# HELP "):
            continue
        match = LINE.match(line)
        assert match, line
        assert match["name"] in declared, f"{match['name']} has no TYPE before it"
        labels = dict(LABEL.findall(match["labels"]))
        found[(match["name"], labels.get("UUID", labels.get("Hostname")))] = (float(match["value"]), labels)
    return found


@pytest.fixture
def fleet(gpu_models):
    now = timezone.now()
    node = Node.objects.create(hostname="gpu-01", status=NodeStatus.ONLINE, last_seen=now)
    GPU.objects.create(
        node=node, index=3, uuid="GPU-aaa", name='NVIDIA "H100"', memory_total_mib=81559, last_sample_at=now,
        util_gpu=97, util_mem=41, mem_used_mib=60211, temp_c=71, power_w=512.3, sm_clock_mhz=1980,
        mem_clock_mhz=2619, fan_pct=None, pcie_tx_kib_s=1200, pcie_rx_kib_s=88000, ecc_volatile=0,
        clocks_event_reasons=4,
    )  # fmt: skip
    GPU.objects.create(node=node, index=4, uuid="GPU-old", last_sample_at=now - timedelta(hours=1), util_gpu=5)
    silent = Node.objects.create(hostname="gpu-02", last_seen=now - timedelta(hours=1))
    GPU.objects.create(node=silent, index=0, uuid="GPU-gone", last_sample_at=now - timedelta(hours=1), util_gpu=5)
    return node


def scrape(client, **headers):
    return client.get("/metrics", **headers)


@override_settings(METRICS_TOKEN=TOKEN)
def test_it_reports_the_latest_state_with_dcgm_names_and_labels(client, fleet):
    response = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    metrics = parse(response.content.decode())
    value, labels = metrics[("DCGM_FI_DEV_GPU_UTIL", "GPU-aaa")]
    assert value == 97
    assert labels == {
        "gpu": "3",
        "UUID": "GPU-aaa",
        "device": "nvidia3",
        "modelName": 'NVIDIA \\"H100\\"',
        "Hostname": "gpu-01",
    }
    expected = {
        "DCGM_FI_DEV_MEM_COPY_UTIL": 41,
        "DCGM_FI_DEV_FB_USED": 60211,
        "DCGM_FI_DEV_FB_FREE": 81559 - 60211,
        "DCGM_FI_DEV_GPU_TEMP": 71,
        "DCGM_FI_DEV_POWER_USAGE": 512.3,
        "DCGM_FI_DEV_SM_CLOCK": 1980,
        "DCGM_FI_DEV_MEM_CLOCK": 2619,
        "DCGM_FI_PROF_PCIE_TX_BYTES": 1200 * 1024,
        "DCGM_FI_PROF_PCIE_RX_BYTES": 88000 * 1024,
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": 0,
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": 4,
    }
    assert {name: metrics[(name, "GPU-aaa")][0] for name in expected} == expected
    assert metrics[("fleet_node_up", "gpu-01")][0] == 1 and metrics[("fleet_node_up", "gpu-02")][0] == 0


@override_settings(METRICS_TOKEN=TOKEN)
def test_missing_values_and_stale_gpus_are_left_out_not_zero(client, fleet):
    text = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    assert "DCGM_FI_DEV_FAN_SPEED" not in text  # the only GPU with a fresh sample has no fan
    assert "GPU-old" not in text and "GPU-gone" not in text
    assert "# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter" in text


@override_settings(METRICS_TOKEN=TOKEN)
@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Token {TOKEN}", "Bearer"])
def test_it_refuses_a_missing_or_wrong_token(client, fleet, authorization):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = scrape(client, **headers)
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    assert b"DCGM" not in response.content


@pytest.mark.parametrize("token", ["", TOKEN])
def test_staff_may_read_it_with_their_session_and_researchers_may_not(client, cast, fleet, token):
    with override_settings(METRICS_TOKEN=token):
        assert scrape(client).status_code == 401
        client.force_login(cast["owner"])
        assert scrape(client).status_code == 403
        client.force_login(cast["admin"])
        response = scrape(client)
    assert response.status_code == 200 and b"DCGM_FI_DEV_GPU_UTIL" in response.content


@override_settings(METRICS_TOKEN="")
def test_an_empty_token_setting_never_matches_a_bearer_token(client, fleet):
    assert scrape(client, HTTP_AUTHORIZATION="Bearer ").status_code == 401
