"""The Fleet page: every node and GPU as a tile, with owners, N/A for missing values and a summary."""

import re

import pytest
from django.utils import timezone

from inventory.models import GPU, Node
from monitoring.storage.latest import ensure
from tests.monitoring.live.conftest import make_fleet
from tests.support.gpus import set_states


@pytest.fixture
def fleet(db):
    return make_fleet()


def tile(body: str, uuid: str) -> str:
    match = re.search(rf'<article class="tile[^"]*" data-gpu="{uuid}".*?</article>', body, re.S)
    assert match, uuid
    return match.group(0)


def test_a_busy_gpu_shows_its_figures_owner_and_colour(client, cast, fleet):
    client.force_login(cast["outsider"])
    html = tile(client.get("/fleet/").content.decode(), "GPU-live-0")
    assert 'class="tile util-full"' in html
    assert "97 %" in html and "58.8 / 79.6 GiB" in html and 'data-css-width="74%"' in html
    assert "71 °C" in html and "512 W" in html
    assert "<b>alice</b> python · 57.6 GiB" in html


def test_a_gpu_that_never_reported_shows_na_not_zero(client, cast, fleet):
    client.force_login(cast["owner"])
    html = tile(client.get("/fleet/").content.decode(), "GPU-live-2")
    assert 'class="tile util-unknown"' in html
    assert 'data-field="util">N/A<' in html and 'data-field="mem">N/A / N/A GiB<' in html
    assert 'title="Temperature">N/A<' in html and 'title="Power draw">N/A<' in html
    assert "0 %" not in html and "0 W" not in html and "No processes" in html


def test_an_offline_node_is_greyed(client, cast, fleet):
    client.force_login(cast["owner"])
    body = client.get("/fleet/").content.decode()
    assert 'class="node card offline" data-node="gpu-02"' in body
    assert 'class="node card online" data-node="gpu-01"' in body


def test_throttling_is_shown_from_the_clocks_event_bits(client, cast, fleet):
    set_states(GPU.objects.filter(uuid="GPU-live-0"), clocks_event_reasons=0x20 | 0x1)
    set_states(GPU.objects.filter(uuid="GPU-live-1"), clocks_event_reasons=0x1)
    client.force_login(cast["owner"])
    body = client.get("/fleet/").content.decode()
    assert '<span class="badge red">Thermal throttling</span>' in tile(body, "GPU-live-0")
    assert "throttling" not in tile(body, "GPU-live-1").lower()


def test_an_idle_gpu_with_a_forgotten_process_is_held_by_its_os_user(client, cast, fleet):
    processes = [{"pid": 7, "user": "carol", "name": "python", "cmdline": "python x.py", "mem_used_mib": 2048}]
    set_states(GPU.objects.filter(uuid="GPU-live-1"), processes=processes)
    client.force_login(cast["owner"])
    html = tile(client.get("/fleet/").content.decode(), "GPU-live-1")
    assert "<b>carol</b> python · 2.0 GiB" in html
    assert 'data-field="band">Idle · held<' in html and 'data-free="0"' in html


def test_the_summary_counts_busy_idle_and_offline_gpus(client, cast, fleet):
    client.force_login(cast["owner"])
    body = client.get("/fleet/").content.decode()
    stats = dict(re.findall(r'data-stat="(\w+)">([^<]*)<', body))
    assert stats == {"busy": "1", "idle": "1", "offline": "1", "utilization": "49 %", "power_w": "583 W"}


def test_the_filters_offer_the_models_and_nodes_present(client, cast, fleet):
    client.force_login(cast["teammate"])
    body = client.get("/fleet/").content.decode()
    assert "<option>H100 SXM</option>" in body and "<option>gpu-02</option>" in body
    assert 'data-free="1"' in tile(body, "GPU-live-1") and 'data-free="0"' in tile(body, "GPU-live-0")


def test_free_only_means_free_for_the_viewer(client, cast, fleet, settings):
    # alice's own process does not make her GPU busy for her; a small process of someone else does not
    # either; a GPU on an offline node is never free.
    settings.FREE_GPU_FOREIGN_MEMORY_MIB = 1024
    small = [{"pid": 8, "user": "bob", "name": "python", "cmdline": "x", "mem_used_mib": 300}]
    set_states(GPU.objects.filter(uuid="GPU-live-1"), processes=small)
    client.force_login(cast["owner"])
    body = client.get("/fleet/").content.decode()
    assert 'data-free="1"' in tile(body, "GPU-live-0") and 'data-free="1"' in tile(body, "GPU-live-1")
    assert 'data-free="0"' in tile(body, "GPU-live-2")  # its node is offline


def test_an_empty_fleet_says_how_to_add_a_node(client, cast):
    client.force_login(cast["owner"])
    assert "fleet_add_node HOSTNAME" in client.get("/fleet/").content.decode()


def test_the_page_does_one_query_per_table_however_large_the_fleet(client, cast, fleet, django_assert_max_num_queries):
    for n in range(3, 10):
        node = Node.objects.create(hostname=f"gpu-{n:02}", last_seen=timezone.now())
        made = GPU.objects.bulk_create(GPU(node=node, index=i, uuid=f"GPU-{n}-{i}") for i in range(8))
        ensure(gpu.pk for gpu in made)
    client.force_login(cast["owner"])
    with django_assert_max_num_queries(9):
        assert client.get("/fleet/").status_code == 200
