"""In a real browser: a GPU page's Health card shows problems, memory counters and the history from the
simulated agent (remapped rows, XID errors) and a failed burn-in, and fits a 390 px phone; an admin's
"Burn in this GPU" queues a run and links it, and a researcher has no such button."""

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from tests.conftest import log_in
from tests.e2e.test_narrow_pages import overflow
from tests.support.health import REMAP_GPU, XID_GPU, failed_burnin, simulated_node, store_history
from training.models import Run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def history(cast, gpu_models):
    node, simulator = simulated_node()
    start = store_history(simulator, clean_until_s=600)
    failed_burnin(node.gpus.get(index=REMAP_GPU), start + timedelta(seconds=1200))
    return node


def test_a_gpu_page_shows_its_health_history(page, asgi_server, history):
    log_in(page, asgi_server, "alice")
    remapped = history.gpus.get(index=REMAP_GPU)

    page.goto(f"{asgi_server.url}/fleet/gpus/{remapped.uuid}/", wait_until="domcontentloaded")

    health = page.locator("#health")
    expect(health.locator(".health-problems li")).to_have_count(2)
    expect(health.locator(".health-problems li").first).to_contain_text("row remap is pending")
    expect(health.locator("dl.memory-health")).to_contain_text("Rows remapped (correctable)3")
    expect(health.locator("dl.memory-health")).to_contain_text("Pages retired (single-bit)N/A")
    items = health.locator(".health-history li")
    expect(items).to_have_count(4)  # the burn-in and three memory changes, newest first
    expect(items.first).to_have_attribute("data-kind", "burnin")
    expect(items.first).to_contain_text("burn-in failed")
    expect(items.first).to_contain_text("46 % of datasheet")
    expect(health.locator('li[data-kind="memory"]', has_text="Rows remapped (correctable): 0 → 3")).to_have_count(1)

    page.goto(f"{asgi_server.url}/fleet/gpus/{history.gpus.get(index=XID_GPU).uuid}/", wait_until="domcontentloaded")

    expect(page.locator('#health li[data-kind="xid"]')).to_have_count(3)
    expect(page.locator("#health [data-health=ok]")).to_have_text("No health problem known.")


def test_the_fleet_page_marks_the_gpus_and_fits_390_px(browser, asgi_server, history):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.set_default_timeout(45_000)
    log_in(page, asgi_server, "alice")

    page.goto(f"{asgi_server.url}/fleet/", wait_until="domcontentloaded")

    expect(page.locator("[data-live-state]")).to_have_text("live")
    marks = page.locator("[data-health]")
    expect(marks).to_have_count(2)
    expect(marks.first).to_have_text("Remap pending")
    expect(marks.first).to_have_attribute("title", "A memory row remap is pending: reset the GPU to apply it.")
    expect(marks.first).to_be_visible()
    sizes = overflow(page)
    assert sizes["scrollWidth"] <= sizes["clientWidth"], sizes
    context.close()


def test_the_health_card_fits_390_px(browser, asgi_server, history):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.set_default_timeout(45_000)
    log_in(page, asgi_server, "alice")

    page.goto(f"{asgi_server.url}/fleet/gpus/{history.gpus.get(index=REMAP_GPU).uuid}/", wait_until="domcontentloaded")

    expect(page.locator("#health .health-history li")).to_have_count(4)
    sizes = overflow(page)
    assert sizes["scrollWidth"] <= sizes["clientWidth"], sizes
    context.close()


@pytest.fixture
def quiet_queue(history):
    """The burn-ins the test queues wait in the node's broker queue (no node worker here); emptied after."""
    yield
    import redis
    from django.conf import settings

    from fleet.celery import node_queue

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(node_queue(history.hostname))
    client.close()


def test_an_admin_burns_in_a_gpu_from_its_page_and_sees_the_run_queued(page, asgi_server, history, quiet_queue):
    gpu = history.gpus.get(index=0)
    log_in(page, asgi_server, "root")
    page.goto(f"{asgi_server.url}/fleet/gpus/{gpu.uuid}/", wait_until="domcontentloaded")

    page.get_by_role("button", name="Burn in this GPU").click()

    run = Run.objects.get(workload="burnin")
    notice = page.locator(".messages li.success")
    expect(notice).to_have_text(
        f"Burn-in queued on {gpu} (run #{run.pk}). Each GPU's health record follows when its run ends."
    )
    assert page.url.startswith(f"{asgi_server.url}/fleet/gpus/{gpu.uuid}/")
    notice.get_by_role("link", name=f"run #{run.pk}").click()
    expect(page.locator("h1")).to_contain_text(run.name)
    expect(page.locator("main")).to_contain_text("Queued")


def test_the_button_area_fits_390_px_for_an_admin_and_a_researcher_sees_no_button(browser, asgi_server, history):
    gpu = history.gpus.get(index=REMAP_GPU)
    for username, buttons in (("root", 1), ("alice", 0)):
        context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        page = context.new_page()
        page.set_default_timeout(45_000)
        log_in(page, asgi_server, username)

        page.goto(f"{asgi_server.url}/fleet/gpus/{gpu.uuid}/", wait_until="domcontentloaded")

        expect(page.locator("[data-live-state]")).to_have_text("live")
        expect(page.get_by_role("button", name="Burn in this GPU")).to_have_count(buttons)
        if buttons:
            box = page.get_by_role("button", name="Burn in this GPU").bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["height"] < 60, box
        sizes = overflow(page)
        assert sizes["scrollWidth"] <= sizes["clientWidth"], sizes
        context.close()
    assert not Run.objects.exists()
