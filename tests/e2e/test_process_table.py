"""In a real browser: the fleet-wide process table sorts by any column, filters by user, node and model, and
follows the fleet live; the End button shows only where the viewer may use it."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inventory.models import GPU, GPUModel, Node
from tests.conftest import log_in
from tests.monitoring.live.conftest import gpu_update
from tests.support.gpus import make_gpu
from tests.support.live import publish
from tests.support.telemetry import process

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def gpu_on(hostname: str, index: int, model: str, processes: list[dict]) -> GPU:
    node, _ = Node.objects.get_or_create(hostname=hostname, defaults={"status": "online", "last_seen": timezone.now()})
    return make_gpu(
        node=node,
        index=index,
        uuid=f"GPU-{hostname}-{index}",
        model=GPUModel.objects.get(name=model),
        memory_total_mib=81559,
        last_sample_at=timezone.now(),
        util_gpu=90,
        processes=processes,
    )


@pytest.fixture
def fleet(cast, gpu_models):
    ago = timezone.now() - timedelta(hours=5)
    return [
        gpu_on("gpu-pt-01", 0, "H100 SXM", [process(101, "alice", 30000, 90, ago, cmdline="python train_a.py")]),
        gpu_on("gpu-pt-01", 1, "H100 SXM", [process(102, "bob", 50000, 40, ago, cmdline="python train_b.py")]),
        gpu_on("gpu-pt-02", 0, "A100 80GB", [process(103, "eve", 10000, 70, ago, cmdline="python train_c.py")]),
    ]


def pids(page) -> list[str]:
    return page.locator("[data-process-rows] tr").evaluate_all("(rows) => rows.map((r) => r.dataset.pid)")


def open_table(page, server, user: str = "alice") -> None:
    log_in(page, server, user)
    page.goto(server.url + "/processes/")
    expect(page.locator("[data-live-state]")).to_have_text("live")
    expect(page.locator("[data-process-rows] tr")).to_have_count(3)


def test_the_table_sorts_by_any_column_and_filters_by_user_node_and_model(page, asgi_server, fleet):
    open_table(page, asgi_server)
    assert pids(page) == ["102", "101", "103"]  # most memory first
    page.click("button[data-sort=memory]")
    assert pids(page) == ["103", "101", "102"]
    page.click("button[data-sort=owner]")
    assert pids(page) == ["101", "102", "103"]  # alice, bob, eve
    page.click("button[data-sort=sm]")
    assert pids(page) == ["101", "103", "102"]  # 90, 70, 40 %
    page.click("button[data-sort=node]")
    expect(page.locator("th:has(button[data-sort=node])")).to_have_attribute("aria-sort", "ascending")
    assert pids(page)[-1] == "103"

    page.select_option("select[name=user]", "bob")
    expect(page.locator("[data-process-rows] tr")).to_have_count(1)
    assert pids(page) == ["102"]
    page.select_option("select[name=user]", "")
    page.select_option("select[name=node]", "gpu-pt-02")
    assert pids(page) == ["103"]
    page.select_option("select[name=node]", "")
    page.select_option("select[name=model]", "H100 SXM")
    expect(page.locator("[data-process-rows] tr")).to_have_count(2)
    page.select_option("select[name=model]", "A100 80GB")
    page.select_option("select[name=user]", "alice")
    expect(page.locator("[data-no-process-rows]")).to_be_visible()


def test_a_new_process_appears_live_and_end_shows_only_on_the_viewers_own(page, asgi_server, fleet):
    open_table(page, asgi_server)
    expect(page.locator("tr[data-pid='101'] [data-end]")).to_have_count(1)
    expect(page.locator("tr[data-pid='102'] [data-end]")).to_have_count(0)

    new = process(104, "alice", 70000, 99, timezone.now(), cmdline="python fresh.py")
    publish([gpu_update("GPU-gpu-pt-02-0", node="gpu-pt-02", index=0, ts=time.time(), processes=[new])])

    expect(page.locator("tr[data-pid='104']")).to_contain_text("python fresh.py")
    expect(page.locator("tr[data-pid='103']")).to_have_count(0)
    assert pids(page)[0] == "104"  # still sorted by memory


def test_an_admin_may_end_any_process(page, asgi_server, fleet):
    open_table(page, asgi_server, "root")
    expect(page.locator("[data-process-rows] [data-end]")).to_have_count(3)


def test_end_on_a_runs_process_says_it_ends_the_whole_run(page, asgi_server, cast, gpu_models):
    from training.models import Run

    run = Run.objects.create(owner=cast["owner"], name="ddp", workload="digits_cnn", strategy="ddp")
    ago = timezone.now() - timedelta(minutes=5)
    ranks = [process(200 + i, "alice", 2000, 80, ago, cmdline="python -m digits_cnn") for i in range(2)]
    for index, rank in enumerate(ranks):
        gpu_on("gpu-pt-03", index, "H100 SXM", [{**rank, "run": run.pk}])  # as the ingest stores a believed claim
    gpu_on("gpu-pt-03", 2, "H100 SXM", [process(300, "alice", 1000, 10, ago, cmdline="python notebook.py")])
    log_in(page, asgi_server, "alice")
    page.goto(asgi_server.url + "/processes/")
    expect(page.locator("[data-process-rows] tr")).to_have_count(3)
    said = []

    def dismiss(dialog):
        said.append(dialog.message)
        dialog.dismiss()  # nothing is sent

    page.on("dialog", dismiss)
    page.click("tr[data-pid='201'] [data-end]")
    page.click("tr[data-pid='300'] [data-end]")

    expect(page.locator("[data-process-rows] tr")).to_have_count(3)
    assert f"this ends run #{run.pk} (2 processes)" in said[0], said
    assert "this ends run" not in said[1] and said[1].startswith("End pid 300"), said
    run.refresh_from_db()
    assert run.cancel_requested_at is None
