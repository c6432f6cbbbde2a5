"""In a real browser, the Fleet page and a GPU's page follow the fleet live, without a reload."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inventory.models import GPU, GPUModel, Node
from inventory.nodes import add_node
from monitoring.storage.models import GPUSample
from tests.conftest import log_in
from tests.monitoring.ingest.agents import gpu_uuid, hello, samples
from tests.monitoring.live.conftest import gpu_update, store_samples
from tests.support.gpus import make_gpu
from tests.support.live import agent_socket, publish
from tests.support.processes import ServerProcess, process_environment, wait_for_other_sessions_to_end

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def asgi_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """A server of this module's own: an agent connection starts the ingest's offline sweep in it, which
    must not outlive these tests and flip nodes that later tests create in the same database."""
    with django_db_blocker.unblock():
        server = ServerProcess(process_environment(), tmp_path_factory.mktemp("live-server") / "server.log")
    yield server
    server.stop()
    with django_db_blocker.unblock():
        wait_for_other_sessions_to_end()


@pytest.fixture
def gpu(cast, gpu_models):
    node = Node.objects.create(hostname="gpu-e2e-01", status="online", last_seen=timezone.now())
    return make_gpu(
        node=node,
        index=0,
        uuid="GPU-e2e-live",
        model=GPUModel.objects.get(name="H100 SXM"),
        memory_total_mib=81559,
        last_sample_at=timezone.now(),
        util_gpu=2,
        mem_used_mib=4,
        power_w=70,
        temp_c=31,
    )


def open_live(page, server, path: str, user: str = "alice") -> None:
    log_in(page, server, user)
    page.goto(server.url + path)
    expect(page.locator("[data-live-state]")).to_have_text("live")


@pytest.fixture
def agent(asgi_server, cast, gpu_models):
    """A node whose agent has said hello (so its GPU is in the inventory) and stays connected."""
    _, token = add_node("gpu-agent-01")
    with agent_socket(asgi_server.url, token) as socket:
        assert socket.send(hello("gpu-agent-01", gpus=1))["type"] == "welcome"
        yield socket


def test_a_gpu_tile_changes_when_an_agent_frame_arrives(page, asgi_server, agent):
    uuid = gpu_uuid("gpu-agent-01", 0)
    open_live(page, asgi_server, "/fleet/")
    tile = page.locator(f"[data-gpu='{uuid}']")
    expect(tile.locator("[data-field='util']")).to_have_text("N/A")

    ack = agent.send(samples("gpu-agent-01", seq=1, gpus=1, util_gpu=93, clocks_event_reasons=0x40))

    assert ack == {"type": "ack", "seq": 1}
    expect(tile.locator("[data-field='util']")).to_have_text("93 %")
    expect(tile).to_have_class("tile util-full")
    expect(tile.locator("[data-field='throttle']")).to_have_text("Thermal throttling")
    expect(tile.locator("[data-field='procs']")).to_contain_text("alice python · 57.6 GiB")
    expect(page.locator("[data-stat='busy']")).to_have_text("1")


def test_a_node_going_offline_greys_its_section_live(page, asgi_server, gpu):
    open_live(page, asgi_server, "/fleet/")
    publish(node_statuses={"gpu-e2e-01": "offline"})
    section = page.locator("section[data-node='gpu-e2e-01']")
    expect(section).to_have_class("node card offline")
    expect(section.locator("[data-field='node-status']")).to_have_text("Offline")
    expect(page.locator("[data-stat='offline']")).to_have_text("1")


def test_the_free_filter_hides_busy_gpus(page, asgi_server, gpu):
    # A free GPU's node is online: keep it from looking silent to the server's offline sweep meanwhile.
    Node.objects.filter(pk=gpu.node_id).update(last_seen=timezone.now() + timedelta(hours=1))
    # bob watches: the update brings alice's process holding 57.6 GiB (free only for alice herself).
    open_live(page, asgi_server, "/fleet/", user="bob")
    page.check("input[name=free]")
    expect(page.locator("[data-gpu='GPU-e2e-live']")).to_be_visible()
    publish([gpu_update("GPU-e2e-live", node="gpu-e2e-01", ts=time.time())])
    expect(page.locator("[data-gpu='GPU-e2e-live']")).to_be_hidden()
    expect(page.locator("[data-empty-filter]")).to_be_visible()


def test_the_gpu_page_draws_its_charts_and_extends_them_live(page, asgi_server, agent):
    gpu = GPU.objects.get(uuid=gpu_uuid("gpu-agent-01", 0))
    now = timezone.now()
    store_samples([GPUSample(gpu=gpu, ts=now - timedelta(seconds=s), util_gpu=50 + s % 7) for s in range(2, 122)])
    open_live(page, asgi_server, f"/fleet/gpus/{gpu.uuid}/")
    util_chart = page.locator("[data-chart='util']")
    expect(util_chart.locator(".main-svg").first).to_be_visible()
    expect(util_chart).to_have_attribute("data-points", "240")  # GPU and memory utilization, 120 samples each

    frame = samples("gpu-agent-01", seq=1, gpus=1)
    assert agent.send(frame)["type"] == "ack"

    expect(util_chart).to_have_attribute("data-points", "242")
    x_end = page.evaluate("() => new Date(document.querySelector(\"[data-chart='util']\")._fullLayout.xaxis.range[1])")
    assert abs(x_end.timestamp() - frame["samples"][0]["ts"]) < 1  # the window slid to the new sample
    expect(page.locator("[data-field='clocks']")).to_have_text("1980 MHz / 2619 MHz")
    expect(page.locator("table.processes")).to_contain_text("python train.py")

    page.click("[data-range='6h']")
    expect(page.locator("[data-range-source]")).to_have_text("1-minute averages, live")
    assert "range=6h" in page.url
