"""/metrics: dcgm-exporter's names and labels from the latest GPU state, behind a bearer token or a staff login."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from inventory.choices import NodeStatus
from inventory.models import GPU, Node
from tests.support.gpus import make_gpu, set_state

pytestmark = pytest.mark.django_db

TOKEN = "scrape-me-please"


def parse(text: str) -> dict:
    """{(name, gpu UUID or Hostname): (value, labels)}, read by Prometheus' own parser of the text format."""
    found = {}
    for metric_family in text_string_to_metric_families(text):
        for sample in metric_family.samples:
            key = sample.labels.get("UUID", sample.labels.get("Hostname"))
            # The parser names a counter's samples <family>_total; key them by the name the exposition gave.
            found[(metric_family.name, key)] = (sample.value, sample.labels)
    return found


@pytest.fixture
def fleet(gpu_models):
    now = timezone.now()
    node = Node.objects.create(hostname="gpu-01", status=NodeStatus.ONLINE, last_seen=now, driver_version="550.54.15")
    make_gpu(
        node=node, index=3, uuid="GPU-aaa", name='NVIDIA "H100"', memory_total_mib=81559, last_sample_at=now,
        pci_bus_id="00000000:3B:00.0",
        util_gpu=97, util_mem=41, mem_used_mib=60211, temp_c=71, power_w=512.3, sm_clock_mhz=1980,
        mem_clock_mhz=2619, fan_pct=None, pcie_tx_kib_s=1200, pcie_rx_kib_s=88000, ecc_volatile=0,
        clocks_event_reasons=4,
    )  # fmt: skip
    make_gpu(node=node, index=4, uuid="GPU-old", last_sample_at=now - timedelta(hours=1), util_gpu=5)
    silent = Node.objects.create(hostname="gpu-02", last_seen=now - timedelta(hours=1))
    make_gpu(node=silent, index=0, uuid="GPU-gone", last_sample_at=now - timedelta(hours=1), util_gpu=5)
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
        "modelName": 'NVIDIA "H100"',
        "Hostname": "gpu-01",
        "pci_bus_id": "00000000:3B:00.0",
        "DCGM_FI_DRIVER_VERSION": "550.54.15",
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


@override_settings(METRICS_TOKEN=TOKEN)
def test_the_pcie_help_names_the_unit_of_the_value(client, fleet):
    text = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    assert "# HELP DCGM_FI_PROF_PCIE_TX_BYTES PCIe transmit throughput in bytes/s." in text
    assert "KiB" not in text.split("DCGM_FI_PROF_PCIE_TX_BYTES", 1)[1].split("\n", 1)[0]


@override_settings(METRICS_TOKEN=TOKEN)
def test_each_node_is_its_own_target_listed_for_service_discovery(client, fleet):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    groups = client.get("/metrics/targets", **auth).json()
    by_instance = {group["labels"]["instance"]: group for group in groups}
    assert set(by_instance) == {"gpu-01", "gpu-02", "server"}
    assert by_instance["gpu-01"]["targets"] == ["testserver"]  # the address Prometheus asked
    assert by_instance["gpu-01"]["labels"]["__metrics_path__"] == "/metrics/nodes/gpu-01"

    one = parse(client.get("/metrics/nodes/gpu-01", **auth).content.decode())
    assert {labels["Hostname"] for _, labels in one.values()} == {"gpu-01"}
    assert one[("DCGM_FI_DEV_GPU_UTIL", "GPU-aaa")][0] == 97
    silent = parse(client.get("/metrics/nodes/gpu-02", **auth).content.decode())
    assert silent == {("fleet_node_up", "gpu-02"): (0.0, {"Hostname": "gpu-02"})}
    assert client.get("/metrics/nodes/gpu-99", **auth).status_code == 404


@pytest.mark.parametrize("path", ["/metrics/targets", "/metrics/nodes/gpu-01", "/metrics/server"])
@override_settings(METRICS_TOKEN=TOKEN)
def test_every_scrape_path_wants_the_token(client, fleet, path):
    assert client.get(path).status_code == 401
    assert client.get(path, HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


@override_settings(METRICS_TOKEN=TOKEN, ALERT_IDLE_MAX_UTIL_PCT=5.0)
def test_the_fleet_series_say_who_holds_and_uses_each_gpu_and_how_long_it_idled(client, cast, fleet):
    from inventory.models import OsAccount
    from monitoring.storage.models import GPUSample
    from monitoring.storage.partitions import PARTITIONS
    from reservations.models import Reservation
    from tests.support.telemetry import ensure_partitions
    from training.models import Run

    now = timezone.now()
    busy = GPU.objects.get(uuid="GPU-aaa")
    set_state(busy, processes=[{"pid": 4242, "user": "asmith", "mem_used_mib": 59000}])
    OsAccount.objects.create(user=cast["owner"], username="asmith")
    Reservation.objects.create(
        user=cast["teammate"], gpu=busy, start=now - timedelta(hours=1), end=now + timedelta(hours=1)
    )
    run = Run.objects.create(owner=cast["teammate"], name="r", workload="digits_cnn", strategy="single")
    idle = make_gpu(
        node=fleet, index=5, uuid="GPU-idle", last_sample_at=now, util_gpu=0,
        processes=[{"pid": 77, "user": "svc-fleet", "mem_used_mib": 900, "run": run.pk}],
    )  # fmt: skip
    make_gpu(node=fleet, index=6, uuid="GPU-never", last_sample_at=now, util_gpu=1)
    ensure_partitions(now - timedelta(minutes=10), now)
    GPUSample.objects.create(gpu=idle, ts=now - timedelta(minutes=10), util_gpu=90)
    PARTITIONS.reset()  # made in this test's transaction, which is rolled back

    metrics = parse(scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode())

    value, labels = metrics[("fleet_gpu_booked", "GPU-aaa")]
    assert value == 1 and labels["holder"] == "bob"
    assert ("fleet_gpu_booked", "GPU-idle") not in metrics
    value, labels = metrics[("fleet_gpu_process_memory_mib", "GPU-aaa")]
    assert value == 59000 and (labels["user"], labels["owner"], labels["run"], labels["pid"]) == (
        "asmith",
        "alice",
        "",
        "4242",
    )
    value, labels = metrics[("fleet_gpu_process_memory_mib", "GPU-idle")]
    assert value == 900 and (labels["user"], labels["owner"], labels["run"]) == ("svc-fleet", "bob", str(run.pk))
    assert metrics[("fleet_gpu_idle_seconds", "GPU-aaa")][0] == 0
    assert 595 <= metrics[("fleet_gpu_idle_seconds", "GPU-idle")][0] <= 620
    assert metrics[("fleet_gpu_idle_seconds", "GPU-never")][0] == 86400  # nothing busy within the day it looks back
