"""A researcher launches a profiled run from the browser, reads its top operators and downloads its trace."""

import json
import re

import pytest

from tests.conftest import log_in
from tests.e2e.test_narrow_pages import narrow_page
from tests.support.node_workers import NodeWorker, unique_hostname
from tests.training.conftest import add_node, end_every_run, wait_for
from training.choices import RunStatus
from training.models import Run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def node_with_worker(gpu_models, tmp_path):
    worker = NodeWorker(unique_hostname("gpu-prof"), tmp_path / "worker.log")
    node = add_node(worker.hostname, gpus=2)
    yield node
    end_every_run()
    worker.stop()


def test_a_run_launched_with_the_profiler_shows_its_operators_and_offers_its_trace(
    page, browser, asgi_server, cast, node_with_worker
):
    log_in(page, asgi_server, "alice")
    page.goto(asgi_server.url + "/runs/new/")
    page.fill("#id_name", "profiled in the browser")
    page.select_option("#id_workload", "digits_cnn")
    page.fill("#id_epochs", "1")
    page.check("#id_profile")
    page.fill("#id_profile_wait", "2")
    page.fill("#id_profile_warmup", "1")
    page.fill("#id_profile_active", "3")
    page.check(f"[data-node='{node_with_worker.hostname}'] input[name=gpus] >> nth=0")
    page.click("button[type=submit]")

    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run = Run.objects.get(name="profiled in the browser")
    assert run.profiler == {"kind": "torch", "wait": 2, "warmup": 1, "active": 3, "ranks": "0"}
    page.wait_for_selector("#status .badge[data-status=succeeded]", timeout=180_000)
    wait_for(run, RunStatus.SUCCEEDED, timeout_s=10)
    page.click("#profile-ready a")

    page.wait_for_selector("#profile table.profile-top")
    table = page.locator("#profile table.profile-top")
    assert table.locator("th").first.text_content() == "Operator"
    first_row = table.locator("tbody tr").first.locator("td")
    assert first_row.nth(0).inner_text().startswith("aten::") or "::" in first_row.nth(0).inner_text()
    assert float(first_row.nth(2).inner_text()) > 0  # self CPU (ms)
    assert "ms a step" in page.locator("#profile table.profile-split").inner_text()
    with page.expect_download() as download:
        page.click("#profile a[download]")
    assert download.value.suggested_filename == f"run-{run.pk}-rank-0-trace.json"
    trace = json.loads(open(download.value.path(), encoding="utf-8").read())
    assert any(str(event.get("name", "")).startswith("ProfilerStep#") for event in trace["traceEvents"])

    phone = narrow_page(browser, asgi_server)  # long operator names scroll inside their table, not the page
    phone.goto(f"{asgi_server.url}/runs/{run.pk}/")
    phone.wait_for_selector("#profile table.profile-top")
    sticking_out = phone.evaluate(
        """() => [...document.querySelectorAll("#profile *")]
            .filter((el) => !el.closest(".table-scroll") || el.classList.contains("table-scroll"))
            .filter((el) => el.getBoundingClientRect().right > document.scrollingElement.clientWidth + 0.5)
            .map((el) => el.tagName + "." + el.className + ": " + el.textContent.slice(0, 40))"""
    )
    assert sticking_out == []
