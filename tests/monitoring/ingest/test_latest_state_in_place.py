"""Every flush rewrites each reporting GPU's latest-state row (GPUState). The new version must fit on the page of
the old one, so PostgreSQL updates it in place (a heap-only update: no index entry written, no row moved); without
room kept free on each page, rows packed full moved to a new page on every flush, the table grew by megabytes a
minute and the latest-state update cost more (docs/benchmarks.md, "The GPU table's free room")."""

import time

import pytest
from django.db import connection
from django.utils import timezone

from inventory.models import GPU
from monitoring.agent.metrics import METRIC_KEYS
from monitoring.ingest.validation import INTEGER_COLUMNS, Sample
from monitoring.ingest.writer import Frame, GPURef, write_frames
from monitoring.storage.models import GPUState
from tests.monitoring.ingest.storage import make_gpus

# Real commits: a page is pruned of the versions a flush left behind only once no transaction can see them.
pytestmark = pytest.mark.django_db(transaction=True)

GPUS = 64
FLUSHES = 10
SETTLED_AFTER = 3  # the first flushes grow fresh rows (no metrics yet) to their full width: those may move


def every_metric(step: int) -> tuple:
    return tuple(step if key in INTEGER_COLUMNS else step + 0.5 for key in METRIC_KEYS)


def process(gpu: GPU) -> dict:
    return {
        "pid": 4000 + gpu.index,
        "user": "alice",
        "name": "python",
        "cmdline": "python train.py --config configs/resnet50.yaml --lr 3e-4 --batch-size 256",
        "mem_used_mib": 59000.0,
        "sm_util": 95.0,
        "started_at": time.time() - 600,
    }


def flush(gpus: list[GPU], step: int) -> None:
    ts = time.time() - 100 + step
    samples = [
        (GPURef(gpu.pk, gpu.uuid, gpu.index, "gpu-01", 81559), Sample(gpu.uuid, ts, every_metric(step), [process(gpu)]))
        for gpu in gpus
    ]
    write_frames([Frame(gpus[0].node_id, "s", "b", step, samples)], timezone.now())


def pages(gpus: list[GPU]) -> dict[int, int]:
    """Each GPU row's page (the block of its ctid): an in-place update keeps it, a moved row changes it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT gpu_id, (ctid::text::point)[0]::int FROM monitoring_gpustate WHERE gpu_id = ANY(%s)",
            [[gpu.pk for gpu in gpus]],
        )
        return dict(cursor.fetchall())


def test_each_flush_rewrites_the_latest_state_in_place_once_rows_are_full_width():
    gpus = make_gpus(GPUS)
    moved_per_flush = []
    for step in range(1, FLUSHES + 1):
        before = pages(gpus)
        flush(gpus, step)
        after = pages(gpus)
        moved_per_flush.append(sum(before[gpu_id] != after[gpu_id] for gpu_id in before))
    assert GPUState.objects.get(gpu=gpus[-1].pk).util_gpu == FLUSHES + 0.5
    assert moved_per_flush[SETTLED_AFTER:] == [0] * (FLUSHES - SETTLED_AFTER), moved_per_flush


def test_the_latest_state_table_keeps_half_of_each_page_free_for_new_versions():
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'monitoring_gpustate'")
        assert "fillfactor=50" in cursor.fetchone()[0]
