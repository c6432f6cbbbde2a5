"""A node's page and a GPU's page: live tiles, the process table with owners, and the chart containers."""

import re
import time

import pytest

from inventory.models import GPU
from monitoring.storage.models import NvLinkState
from tests.monitoring.live.conftest import make_fleet
from tests.support.gpus import set_state, set_states


@pytest.fixture
def fleet(db):
    return make_fleet()


def test_a_node_page_shows_its_gpus_processes_and_charts(client, cast, fleet):
    client.force_login(cast["teammate"])
    body = client.get("/fleet/nodes/gpu-01/").content.decode()
    assert body.count('data-gpu="') == 2 and "gpu-02" not in body
    assert '<td><a href="/fleet/gpus/GPU-live-0/">GPU 0</a></td>' in body
    assert "<b>alice</b>" in body and "python train.py" in body and "57.6 GiB" in body
    assert {"util_gpu", "mem_used_mib", "power_w", "temp_c"} == set(re.findall(r'data-chart="(\w+)"', body))
    assert '"uuid": "GPU-live-1"' in body  # the GPUs the charts read
    assert 'data-range="15m"' in body and 'data-range="30d"' in body


def test_a_node_page_of_an_offline_node_without_samples(client, cast, fleet):
    client.force_login(cast["owner"])
    body = client.get("/fleet/nodes/gpu-02/").content.decode()
    assert "Offline" in body and "never seen" in body and "No processes on these GPUs." in body
    assert "Driver N/A · CUDA N/A" in body


def test_an_unknown_node_is_a_404(client, cast, fleet):
    client.force_login(cast["owner"])
    assert client.get("/fleet/nodes/gpu-99/").status_code == 404


def test_a_gpu_page_shows_details_processes_and_six_charts(client, cast, fleet):
    started = time.time() - 2 * 3600 - 5 * 60
    set_states(
        GPU.objects.filter(uuid="GPU-live-0"),
        processes=[
            {"pid": 9, "user": "alice", "name": "python", "cmdline": "python train.py --lr 3e-4", "started_at": started}
        ],
    )
    client.force_login(cast["owner"])
    body = client.get("/fleet/gpus/GPU-live-0/").content.decode()
    assert "<h1>GPU 0 · H100 SXM</h1>" in body
    assert "<code>GPU-live-0</code>" in body and "NVIDIA H100 80GB HBM3" in body
    assert 'data-field="clocks">1980 MHz / 2619 MHz<' in body and 'data-field="fan">N/A<' in body
    assert "python train.py --lr 3e-4" in body and "2 h 5 min" in body and "<td>N/A</td>" in body
    assert len(re.findall(r'data-chart="\w+"', body)) == 6


def test_a_gpu_page_lists_each_nvlink_with_a_down_link_as_na(client, cast, fleet):
    gpu = GPU.objects.get(uuid="GPU-live-0")
    links = [{"tx_kib_s": 2_441_406, "rx_kib_s": 976_562}, {"tx_kib_s": None, "rx_kib_s": None}]
    set_state(gpu, nvlink_tx_kib_s=2_441_406, nvlink_rx_kib_s=976_562)
    NvLinkState.objects.create(gpu=gpu, ts=gpu.state.last_sample_at.timestamp() - 5, links=links)
    client.force_login(cast["owner"])
    body = client.get("/fleet/gpus/GPU-live-0/").content.decode()
    assert 'All links: <span data-field="nvlink_total">2.5 / 1.0 GB/s</span>' in body
    links = re.findall(r'data-link="(\d+)"><span class="link-name">L\d+</span> <span data-link-rates>([^<]+)<', body)
    assert links == [("0", "2.5 / 1.0"), ("1", "N/A / N/A")]
    other = client.get("/fleet/gpus/GPU-live-1/").content.decode()
    assert 'id="nvlink"' not in other  # no NVLink: no card


def test_a_gpu_page_without_any_sample_is_all_na(client, cast, fleet):
    client.force_login(cast["owner"])
    body = client.get("/fleet/gpus/GPU-live-2/").content.decode()
    assert "<h1>GPU 0 · unknown model</h1>" in body
    assert '<span data-field="ts">N/A</span>' in body and "No processes on this GPU." in body
    for field in ("util_mem", "fan", "ecc"):
        assert f'data-field="{field}">N/A<' in body


def test_an_unknown_gpu_is_a_404(client, cast, fleet):
    client.force_login(cast["owner"])
    assert client.get("/fleet/gpus/GPU-nope/").status_code == 404


def test_anonymous_visitors_are_sent_to_log_in(client, fleet):
    for path in ("/fleet/nodes/gpu-01/", "/fleet/gpus/GPU-live-0/"):
        assert client.get(path)["Location"].startswith("/login/?next=")
