"""In a real browser: an admin opens Alerts on the open health alerts, and an alert page draws its evidence."""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model

from monitoring.alerts.choices import AlertKind, AlertSeverity
from monitoring.alerts.findings import Finding
from monitoring.alerts.lifecycle import open_alerts
from tests.conftest import PASSWORD, log_in
from tests.support.telemetry import add_gpu, process, stream

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def idle_alert_with_telemetry(owner):
    gpu = add_gpu("gpu-07", 2)
    now = datetime.now(UTC).replace(microsecond=0)
    notebook = process(4242, "alice", mem_used_mib=8192, started_at=now - timedelta(hours=3))
    stream(gpu, now - timedelta(minutes=40), now, util=0, processes=[notebook])
    details = {"node": "gpu-07", "index": 2, "pid": 4242, "max_util_pct": 5, "min_memory_mib": 1024}
    finding = Finding(
        key="idle_process:evidence",
        kind=AlertKind.IDLE_PROCESS,
        title="Idle python (pid 4242) on gpu-07 GPU 2",
        owner_id=owner.pk,
        node_id=gpu.node_id,
        gpu_id=gpu.pk,
        details={**details, "window_minutes": 30},
    )
    return open_alerts([finding], now - timedelta(minutes=5))[0]


def throttling_alert(gpu_name: str):
    finding = Finding(
        key=f"gpu_throttling:{gpu_name}",
        kind=AlertKind.GPU_THROTTLING,
        severity=AlertSeverity.WARNING,
        title=f"{gpu_name} is throttling (thermal)",
    )
    return open_alerts([finding], datetime.now(UTC))[0]


def test_an_admin_sees_open_health_alerts_and_an_alert_draws_its_evidence(page, asgi_server, gpu_models):
    alice = get_user_model().objects.create_user("alice", password=PASSWORD)
    get_user_model().objects.create_user("root", password=PASSWORD, is_staff=True)
    alert = idle_alert_with_telemetry(alice)
    throttling_alert("gpu-03 GPU 1")
    throttling_alert("gpu-04 GPU 0")

    log_in(page, asgi_server, "root")
    page.goto(asgi_server.url + "/alerts/", wait_until="domcontentloaded", timeout=60_000)
    assert page.locator("[data-tab=open]").inner_text() == "Open (3)"
    assert page.get_by_text("gpu-03 GPU 1 is throttling (thermal)").is_visible()
    assert page.get_by_text("gpu-04 GPU 0 is throttling (thermal)").is_visible()

    # plotly.js is a few MB: on a busy machine the page's load event can take a while
    page.goto(f"{asgi_server.url}/alerts/{alert.pk}/", wait_until="domcontentloaded", timeout=60_000)
    page.wait_for_selector("#evidence-chart[data-drawn='1']", timeout=90_000)
    assert page.locator("#evidence-chart .main-svg").count() >= 1
    assert page.locator("#evidence-chart .scatterlayer .trace").count() == 2  # utilization and memory
    assert page.locator("#evidence-chart .shapelayer path").count() >= 2  # the two thresholds (and the opening)
