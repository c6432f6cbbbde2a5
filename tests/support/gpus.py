"""GPUs for tests, with a latest state: the inventory's GPU row and telemetry's state row, from one set of fields."""

from django.db.models import QuerySet

from inventory.models import GPU
from monitoring.storage.latest import STATE_FIELDS
from monitoring.storage.models import GPUState


def split(fields: dict) -> tuple[dict, dict]:
    """(the GPU's own fields, its latest state's fields)."""
    own = {key: value for key, value in fields.items() if key not in STATE_FIELDS}
    return own, {key: value for key, value in fields.items() if key in STATE_FIELDS}


def make_gpu(**fields) -> GPU:
    """GPU.objects.create that also takes latest-state fields (util_gpu=…, processes=…, last_sample_at=…)."""
    own, state = split(fields)
    gpu = GPU.objects.create(**own)
    if state:
        set_state(gpu, **state)
    return gpu


def set_state(gpu: GPU | int, **state) -> None:
    """Write a GPU's latest state as the ingest would have left it (the fields given; others as they are)."""
    gpu_id = gpu if isinstance(gpu, int) else gpu.pk
    GPUState.objects.update_or_create(gpu_id=gpu_id, defaults=state)
    if isinstance(gpu, GPU):
        gpu.refresh_from_db()


def set_states(gpus: QuerySet, **fields) -> int:
    """QuerySet.update for GPUs whose fields may include latest-state ones; returns how many GPUs matched."""
    own, state = split(fields)
    ids = list(gpus.values_list("pk", flat=True))
    if own:
        GPU.objects.filter(pk__in=ids).update(**own)
    for gpu_id in ids:
        set_state(gpu_id, **state)
    return len(ids)
