"""Each GPU's latest state as the ingest last wrote it (GPUState, NvLinkState): the one way every part reads it.

The inventory's GPU is identity only; its latest metrics, processes and sample time are telemetry's, one row per
GPU that every flush rewrites. Readers ask here for plain rows that mix the two under plain field names
(`util_gpu`, `processes`, `uuid`, `node__hostname` …), or for one GPU's state, so none of them spells the join.
"""

from collections.abc import Iterable

from django.db.models import Q, QuerySet
from django.db.models.signals import post_save
from django.dispatch import receiver

from inventory.models import GPU
from monitoring.agent.metrics import METRIC_KEYS
from monitoring.storage.models import GPUState, NvLinkState

# What GPUState keeps of a GPU, by the names readers use.
STATE_FIELDS = frozenset(("last_sample_at", *METRIC_KEYS, "processes"))
# Per-link NVLink figures, kept in their own row (NvLinkState), by the names readers use.
LINK_FIELDS = {"nvlink_ts": "nvlink_state__ts", "nvlink_links": "nvlink_state__links"}


def lookup(field: str) -> str:
    """The ORM path of a field from a GPU queryset: a state field through its GPUState, others as they are."""
    if field in STATE_FIELDS:
        return f"state__{field}"
    return LINK_FIELDS.get(field, field)


def values_list(gpus: QuerySet, *fields: str) -> list[tuple]:
    """Rows of (field, …) for the GPUs, in the queryset's order, with one query."""
    return list(gpus.values_list(*(lookup(field) for field in fields)))


def values(gpus: QuerySet, *fields: str) -> list[dict]:
    """Rows {field: value} for the GPUs, in the queryset's order, with one query; a GPU never sampled reads None."""
    return [dict(zip(fields, row, strict=True)) for row in values_list(gpus, *fields)]


def sampled_since(when) -> Q:
    """GPUs whose latest sample is at least this recent."""
    return Q(state__last_sample_at__gte=when)


def ever_sampled() -> Q:
    """GPUs that have reported at least once."""
    return Q(state__last_sample_at__isnull=False)


def with_processes() -> Q:
    """GPUs whose latest sample lists at least one process."""
    return ~Q(state__processes=[])


def running(run_id: int) -> Q:
    """GPUs whose latest sample lists a process the ingest believed to be of this run."""
    return Q(state__processes__contains=[{"run": run_id}])


def processes(gpu_ids: Iterable[int]) -> dict[int, list]:
    """GPU id → the processes of its latest sample ([] when none or never sampled)."""
    rows = GPUState.objects.filter(gpu_id__in=list(gpu_ids)).values_list("gpu_id", "processes")
    return {gpu_id: found or [] for gpu_id, found in rows}


def with_state(gpus: QuerySet) -> QuerySet:
    """GPUs with their state joined, for code that reads model instances (`of(gpu)` then costs no query)."""
    return gpus.select_related("state")


def of(gpu: GPU) -> GPUState:
    """A GPU's latest state; an empty one (every field N/A) for a GPU with no state row yet."""
    try:
        return gpu.state
    except GPUState.DoesNotExist:
        return GPUState(gpu=gpu)


def nvlink(gpu: GPU) -> dict | None:
    """A GPU's per-link NVLink figures as last reported, with their time ({ts, links}); None without NVLink."""
    try:
        return gpu.nvlink_state.kept()
    except NvLinkState.DoesNotExist:
        return None


def links(ts: float | None, found: list | None) -> dict | None:
    """Per-link figures read as values (`nvlink_ts`, `nvlink_links`) in the shape pages and /metrics take."""
    return NvLinkState.figures(ts, found)


def ensure(gpu_ids: Iterable[int]) -> None:
    """Give each GPU a state row (every field N/A) if it has none, so the ingest's update always finds one."""
    GPUState.objects.bulk_create([GPUState(gpu_id=gpu_id) for gpu_id in gpu_ids], ignore_conflicts=True)


@receiver(post_save, sender=GPU, dispatch_uid="monitoring.storage.latest.gpu_state")
def give_a_new_gpu_its_state(sender, instance: GPU, created: bool, raw: bool = False, **kwargs) -> None:
    """Every GPU has its state row from the start, however it was made (a hello, the admin, a script)."""
    if created and not raw:
        ensure([instance.pk])
