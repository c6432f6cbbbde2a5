"""A sweep on one free GPU at a time, watched in a real browser: the page follows its runs live, without
reloading, as the first trains and the next is placed when the GPU comes free."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inventory.models import Node
from tests.conftest import log_in
from tests.support.node_workers import NodeWorker, unique_hostname
from tests.training.conftest import add_node, end_every_run, wait_until
from training.choices import RunStatus
from training.models import Run
from training.sweeps.placing import dispatch_all
from training.sweeps.search import SweepRequest, check_sweep, launch_sweep

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def node_with_worker(gpu_models, tmp_path):
    worker = NodeWorker(unique_hostname("gpu-sweep"), tmp_path / "worker.log")
    node = add_node(worker.hostname, gpus=1)
    yield node
    end_every_run()
    worker.stop()


def beat(node: Node) -> None:
    """What the node's agent and beat do: keep the node online, and place waiting sweep runs."""
    Node.objects.filter(pk=node.pk).update(status="online", last_seen=timezone.now())
    dispatch_all()


def test_the_sweep_page_follows_its_runs_live(page, asgi_server, cast, node_with_worker):
    beat(node_with_worker)
    request = SweepRequest(
        user=cast["owner"],
        workload="digits_cnn",
        mode="grid",
        space={"lr": [0.003, 0.005]},
        base={"epochs": 2, "batch_size": 32, "optimizer": "adam", "seed": 0},
        gpu_model=node_with_worker.gpus.first().model,
        gpu_count=1,
    )
    plans, errors = check_sweep(request)
    assert errors == {}
    sweep = launch_sweep(request, plans)
    first, second = sweep.runs.order_by("pk")

    log_in(page, asgi_server, "alice")
    page.goto(f"{asgi_server.url}/sweeps/{sweep.pk}/")
    page.wait_for_selector("#live-label:text('live')")
    page.evaluate("window.notReloaded = true")
    second_row = f"tr[data-run='{second.pk}']"
    assert page.locator(f"{second_row} [data-field=gpu]").inner_text() == "waiting"

    def both_done() -> bool:
        beat(node_with_worker)
        return Run.objects.filter(sweep=sweep, status=RunStatus.SUCCEEDED).count() == 2

    wait_until(both_done, 240, "both runs of the sweep to succeed")
    # A locator, not wait_for_function: the Content-Security-Policy allows no evaluated strings.
    expect(page.locator("#results [data-field=status].succeeded")).to_have_count(2, timeout=30_000)
    assert page.locator(f"{second_row} [data-field=gpu]").inner_text() == f"{node_with_worker.hostname}:0"
    assert page.evaluate("window.notReloaded") is True
    assert "%" in page.locator(f"tr[data-run='{first.pk}'] [data-field=metric]").inner_text()
    assert page.locator("#parcoords").is_visible() and page.locator("#cancel-sweep").count() == 0
