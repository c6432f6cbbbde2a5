"""The GPU's latest state after a flush is the same whichever writer stored it (the COPY writer reads it back
from its staging table, the others send it as arrays)."""

import time

import pytest
from django.utils import timezone

from inventory.models import GPU
from monitoring.agent.metrics import METRIC_KEYS, SLOW_KEYS
from monitoring.ingest.validation import INTEGER_COLUMNS, Sample
from monitoring.ingest.writer import Frame, GPURef
from monitoring.storage.models import GPUSample, GPUState
from tests.monitoring.ingest.storage import make_gpus
from tests.support.baselines import WRITERS

pytestmark = pytest.mark.django_db

SLOW = next(key for key in SLOW_KEYS if key in INTEGER_COLUMNS)  # a counter sent every 30 s


def values(**given) -> tuple:
    return tuple(given.get(key) for key in METRIC_KEYS)


def frame(gpu: GPU, seq: int, *samples: tuple[float, dict]) -> Frame:
    ref = GPURef(gpu.pk, gpu.uuid, gpu.index, "gpu-01", None)
    return Frame(gpu.node_id, "s", "b", seq, [(ref, Sample(gpu.uuid, ts, values(**v), None)) for ts, v in samples])


@pytest.mark.parametrize("method", ["copy", "insert"])
def test_each_gpu_keeps_its_newest_sample_the_first_of_a_tie_and_its_slow_fields(method):
    first, second = make_gpus()
    now = time.time()
    WRITERS[method]([frame(first, 1, (now - 10, {"util_gpu": 1.0, SLOW: 7}))], timezone.now())
    flushed = WRITERS[method](
        [
            frame(first, 2, (now - 2, {"util_gpu": 20.0, "temp_c": 50.0}), (now - 5, {"util_gpu": 5.0})),
            frame(second, 1, (now - 3, {"util_gpu": 30.0, SLOW: 3})),
            frame(first, 3, (now - 2, {"util_gpu": 99.0})),  # the same time again: the first one stays
        ],
        timezone.now(),
    )
    kept, other = GPUState.objects.get(gpu=first), GPUState.objects.get(gpu=second)
    assert (kept.util_gpu, kept.temp_c, getattr(kept, SLOW)) == (20.0, 50.0, 7)
    assert kept.last_sample_at.timestamp() == pytest.approx(now - 2, abs=1e-6)
    assert (other.util_gpu, getattr(other, SLOW)) == (30.0, 3)
    assert type(getattr(other, SLOW)) is int
    live = {moved.uuid: moved.live_update() for moved in flushed.gpu_updates}
    assert (live[first.uuid]["util_gpu"], live[first.uuid][SLOW]) == (20.0, 7)
    assert GPUSample.objects.filter(gpu=first).count() == 3
