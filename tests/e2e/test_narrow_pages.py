"""In a real browser: the GPU, node and Fleet pages fit a 390 px phone without sideways scrolling, and a
chart range holding a single sample still draws it."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inventory.models import GPUModel, Node
from monitoring.storage.models import GPUSample, NvLinkState
from tests.conftest import log_in
from tests.monitoring.live.conftest import store_samples
from tests.support.gpus import make_gpu
from tests.support.telemetry import process

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_COMMAND = "python -m torch.distributed.run --nproc_per_node=8 train_a_very_large_model_with_a_long_name.py " * 3


@pytest.fixture
def busy_gpu(cast, gpu_models):
    now = timezone.now()
    node = Node.objects.create(
        hostname="gpu-narrow-node-with-a-long-hostname-01", status="online", last_seen=now, labels=["a100", "ib"]
    )
    processes = [process(4242, "alice", 59000, 95, now - timedelta(hours=30), cmdline=LONG_COMMAND)]
    gpu = make_gpu(
        node=node,
        index=0,
        uuid="GPU-8f1c2a3b-4d5e-6f70-8192-a3b4c5d6e7f8",
        model=GPUModel.objects.get(name="H100 SXM"),
        name="NVIDIA H100 80GB HBM3",
        memory_total_mib=81559,
        last_sample_at=now,
        util_gpu=97,
        mem_used_mib=60211,
        power_w=512,
        temp_c=71,
        clocks_event_reasons=0x40,
        processes=processes,
        # An H100's 18 NVLinks, link 5 down.
        nvlink_tx_kib_s=17 * 1_000_000,
        nvlink_rx_kib_s=17 * 900_000,
    )
    NvLinkState.objects.create(
        gpu=gpu,
        ts=now.timestamp(),
        links=[
            {"tx_kib_s": None, "rx_kib_s": None} if link == 5 else {"tx_kib_s": 1_000_000, "rx_kib_s": 900_000}
            for link in range(18)
        ],
    )
    return gpu


def narrow_page(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.set_default_timeout(45_000)  # plotly.min.js is large and the CI machine busy
    log_in(page, server, "alice")
    return page


def overflow(page) -> dict:
    """Sizes of the page and of every element wider than the viewport (empty when nothing sticks out)."""
    return page.evaluate(
        """() => {
            const root = document.scrollingElement;
            const wide = [...document.querySelectorAll("body *")]
                .filter((el) => el.getBoundingClientRect().right > root.clientWidth + 0.5)
                .slice(0, 5).map((el) => el.tagName + "." + el.className);
            return {scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, wide};
        }"""
    )


def test_the_fleet_node_and_gpu_pages_fit_390_px_without_horizontal_scrolling(browser, asgi_server, busy_gpu):
    page = narrow_page(browser, asgi_server)
    too_wide = {}
    for path in ("/fleet/", f"/fleet/nodes/{busy_gpu.node.hostname}/", f"/fleet/gpus/{busy_gpu.uuid}/"):
        page.goto(asgi_server.url + path, wait_until="domcontentloaded")
        expect(page.locator("[data-live-state]")).to_have_text("live")
        if path != "/fleet/":
            expect(page.locator(".chart .main-svg").first).to_be_visible()
        if "/gpus/" in path:
            expect(page.locator(".nvlink-links li")).to_have_count(18)
            expect(page.locator("[data-link='5']")).to_have_text("L5 N/A / N/A")
            expect(page.locator("[data-link='0']")).to_have_text("L0 1.0 / 0.9")
        sizes = overflow(page)
        if sizes["scrollWidth"] > sizes["clientWidth"]:
            too_wide[path] = sizes
    assert too_wide == {}


def test_a_range_with_one_sample_still_shows_it(page, asgi_server, busy_gpu):
    store_samples([GPUSample(gpu=busy_gpu, ts=timezone.now() - timedelta(seconds=30), util_gpu=64, temp_c=70)])
    page.set_default_timeout(45_000)
    log_in(page, asgi_server, "alice")
    page.goto(asgi_server.url + f"/fleet/gpus/{busy_gpu.uuid}/", wait_until="domcontentloaded")
    chart = page.locator("[data-chart='temp']")
    expect(chart).to_have_attribute("data-points", "1")
    expect(chart.locator(".scatterlayer .point")).to_have_count(1)


def test_a_finished_runs_page_fits_390_px_with_a_long_record(browser, asgi_server, busy_gpu, cast):
    from training.models import Run

    ended = timezone.now()
    run = Run.objects.create(
        owner=cast["owner"],
        name="a long ablation",
        workload="digits",
        strategy="single",
        hyperparameters={"learning_rate_schedule": "cosine-with-warmup-and-restarts", "epochs": 3},
        status="succeeded",
        started_at=ended - timedelta(minutes=5),
        finished_at=ended,
        exit_code=0,
        environment={
            "host": busy_gpu.node.hostname,
            "python": "3.11.2 (main, Mar 13 2023, 12:18:29) [GCC 12.2.0]",
            "torch": "2.13.0+cpu",
            "command": LONG_COMMAND.split(),
            "git_commit": "0123456789abcdef0123456789abcdef01234567",
        },
    )
    run.gpus.add(busy_gpu)
    page = narrow_page(browser, asgi_server)
    page.goto(asgi_server.url + f"/runs/{run.pk}/", wait_until="domcontentloaded")
    expect(page.locator("#environment")).to_contain_text("0123456789abcdef")
    sizes = overflow(page)
    assert sizes["scrollWidth"] <= sizes["clientWidth"], sizes
