"""Per-link NVLink figures keep their own row: newest first, whichever writer stores them, and out of the GPU's row
that every flush rewrites (a kilobyte of links there cost 1.5x the database CPU per sample)."""

import time

import pytest
from django.db import connection
from django.utils import timezone

from inventory.models import GPU
from monitoring.agent.metrics import METRIC_KEYS
from monitoring.ingest.validation import Sample
from monitoring.ingest.writer import Frame, GPURef, write_frames
from monitoring.storage import latest
from monitoring.storage.models import GPUState, NvLinkState
from tests.monitoring.ingest.storage import make_gpus
from tests.support.baselines import WRITERS

pytestmark = pytest.mark.django_db

H100 = 18


def links(rate: int, count: int = H100) -> list[dict]:
    return [{"tx_kib_s": rate + link, "rx_kib_s": rate - link} for link in range(count)]


def frame(gpu: GPU, seq: int, ts: float, per_link: list[dict] | None) -> Frame:
    ref = GPURef(gpu.pk, gpu.uuid, gpu.index, "gpu-01", None)
    values = tuple(50.0 if key == "util_gpu" else None for key in METRIC_KEYS)
    return Frame(gpu.node_id, "s", "b", seq, [(ref, Sample(gpu.uuid, ts, values, None, per_link))])


def write(frames: list[Frame], method: str) -> None:
    WRITERS[method](frames, timezone.now())


def kept(gpu: GPU) -> dict | None:
    return latest.nvlink(GPU.objects.get(pk=gpu.pk))


@pytest.mark.parametrize("method", ["copy", "insert", "per-sample"])
def test_the_newest_links_stay_through_samples_without_links_and_a_replayed_older_sample(method):
    gpu, _ = make_gpus()
    now = time.time()
    write([frame(gpu, 1, now - 30, links(1_000))], method)
    write([frame(gpu, 2, now - 20, None), frame(gpu, 3, now - 10, None)], method)  # no links in these samples
    assert kept(gpu) == {"ts": pytest.approx(now - 30), "links": links(1_000)}
    write([frame(gpu, 4, now - 5, links(2_000))], method)
    write([frame(gpu, 5, now - 40, links(9_000))], method)  # a replayed backlog: older than what is kept
    assert kept(gpu) == {"ts": pytest.approx(now - 5), "links": links(2_000)}
    assert GPUState.objects.get(gpu=gpu).util_gpu == 50.0


def test_a_gpu_that_reports_no_nvlink_any_more_has_none():
    gpu, other = make_gpus()
    now = time.time()
    write_frames([frame(gpu, 1, now - 10, links(1_000)), frame(other, 1, now - 10, links(3_000, 4))], timezone.now())
    write_frames([frame(gpu, 2, now - 5, [])], timezone.now())  # "nvlink": null, checked
    assert (kept(gpu), kept(other)["links"]) == (None, links(3_000, 4))
    assert NvLinkState.objects.count() == 2


def test_the_state_row_every_flush_rewrites_stays_narrow_with_eighteen_links():
    gpu, _ = make_gpus()
    write_frames([frame(gpu, 1, time.time(), links(1_000_000))], timezone.now())
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_size(s.*) FROM monitoring_gpustate AS s WHERE gpu_id = %s", [gpu.pk])
        row_bytes = cursor.fetchone()[0]
    assert kept(gpu)["links"] == links(1_000_000)
    assert row_bytes < 700  # 18 links inline made it 1.7 kB, too wide for PostgreSQL's HOT updates
