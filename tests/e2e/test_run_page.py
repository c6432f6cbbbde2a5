"""A researcher launches a run in a real browser and watches its progress arrive live on the run page."""

import re

import pytest

from tests.conftest import log_in
from tests.support.browser import wait_until
from tests.support.node_workers import NodeWorker, unique_hostname
from tests.training.conftest import add_node, end_every_run, wait_for
from training.choices import RunStatus
from training.models import Run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def node_with_worker(gpu_models, tmp_path):
    worker = NodeWorker(unique_hostname("gpu-e2e"), tmp_path / "worker.log")
    node = add_node(worker.hostname, gpus=2)
    yield node
    end_every_run()
    worker.stop()


def chart_points(page, chart_id: str) -> int:
    return page.evaluate(f"document.getElementById('{chart_id}').data[0].x.length")


def test_progress_of_a_launched_run_reaches_the_run_page_live(page, asgi_server, cast, node_with_worker):
    log_in(page, asgi_server, "alice")
    page.goto(asgi_server.url + "/runs/new/")
    page.fill("#id_name", "browser launch")
    page.select_option("#id_workload", "digits_cnn")
    page.fill("#id_epochs", "4")
    page.fill("#id_lr", "0.003")
    page.check(f"[data-node='{node_with_worker.hostname}'] input[name=gpus] >> nth=0")
    assert "$0.35 per hour" in page.locator("#estimate").inner_text()
    page.click("button[type=submit]")

    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run = Run.objects.get(name="browser launch")
    assert page.locator("#live-label").inner_text() in ("connecting…", "live")
    page.wait_for_selector("#live-label:text('live')")
    wait_until(page, "(document.getElementById('chart-loss').data || [{x: []}])[0].x.length > 0", timeout_s=120)
    page.wait_for_selector("#status .badge[data-status=succeeded]", timeout=120_000)

    run = wait_for(run, RunStatus.SUCCEEDED, timeout_s=10)
    assert chart_points(page, "chart-loss") == run.metrics.exclude(loss=None).count()
    assert chart_points(page, "chart-accuracy") >= 1
    accuracy = float(page.locator("#stat-accuracy").inner_text().rstrip(" %"))
    assert accuracy >= 95.0
    assert "held-out accuracy" in page.locator("#logs").inner_text()
    assert page.locator("#environment").inner_text().count("2.13") >= 1
    assert page.locator("#cancel-form").count() == 0
