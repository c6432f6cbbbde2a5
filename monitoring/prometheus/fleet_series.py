"""Series only the fleet knows, beside the DCGM ones: node up, who holds a GPU, whose process uses it, idle time."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from inventory.choices import NodeStatus
from inventory.models import GPU, Node
from monitoring.prometheus.exposition import Sample, family
from monitoring.prometheus.gpus import gpu_labels
from monitoring.storage import latest
from monitoring.storage.models import GPUMinute, GPUSample
from reservations.booking import current_holders
from training.owners import ProcessOwners, believed_run

NODE_UP = ("fleet_node_up", "1 while the node's agent reports (within 3 intervals), 0 otherwise.")
BOOKED = ("fleet_gpu_booked", "1 while a booking holds the GPU; holder names the researcher.")
PROCESS_MEMORY = (
    "fleet_gpu_process_memory_mib",
    "GPU memory a process holds, in MiB, with its OS user, the researcher it belongs to and its run.",
)
IDLE = (
    "fleet_gpu_idle_seconds",
    "Seconds since the GPU's utilization was last at or above ALERT_IDLE_MAX_UTIL_PCT (at most a day).",
)
IDLE_LOOKBACK = timedelta(days=1)
RAW_LOOKBACK = timedelta(hours=1)  # recent enough that the minute rollups may not have it yet


def node_up(nodes: list[Node]) -> list[str]:
    up = [({"Hostname": node.hostname}, int(node.status != NodeStatus.OFFLINE)) for node in nodes]
    return family(*NODE_UP, "gauge", up)


def fleet_families(gpus: list[GPU]) -> list[str]:
    return booked(gpus) + process_memory(gpus) + idle_seconds(gpus)


def booked(gpus: list[GPU]) -> list[str]:
    holders = current_holders([gpu.id for gpu in gpus])
    samples: list[Sample] = [
        ({**gpu_labels(gpu), "holder": holders[gpu.id][0].get_username()}, 1) for gpu in gpus if gpu.id in holders
    ]
    return family(*BOOKED, "gauge", samples)


def process_memory(gpus: list[GPU]) -> list[str]:
    processes = [(gpu, p) for gpu in gpus for p in latest.of(gpu).processes or () if isinstance(p, dict)]
    owners = ProcessOwners(process for _, process in processes)
    samples: list[Sample] = []
    for gpu, process in processes:
        owner, run = owners.of(process), believed_run(process)
        labels = {
            **gpu_labels(gpu),
            "pid": str(process.get("pid", "")),
            "user": process.get("user") or "",
            "owner": owner.get_username() if owner is not None else "",
            "run": "" if run is None else str(run),
        }
        samples.append((labels, process.get("mem_used_mib")))
    return family(*PROCESS_MEMORY, "gauge", samples)


def idle_seconds(gpus: list[GPU]) -> list[str]:
    now = timezone.now()
    threshold = settings.ALERT_IDLE_MAX_UTIL_PCT
    idle = [gpu for gpu in gpus if idle_now(latest.of(gpu).util_gpu, threshold)]
    since = last_busy([gpu.id for gpu in idle], threshold, now)
    samples: list[Sample] = [(gpu_labels(gpu), 0) for gpu in gpus if busy_now(latest.of(gpu).util_gpu, threshold)]
    for gpu in idle:
        busy_at = since.get(gpu.id, now - IDLE_LOOKBACK)
        samples.append((gpu_labels(gpu), round(min((now - busy_at).total_seconds(), IDLE_LOOKBACK.total_seconds()))))
    return family(*IDLE, "gauge", samples)


def last_busy(gpu_ids: list[int], threshold: float, now: datetime) -> dict[int, datetime]:
    """When each GPU was last at or above threshold: raw samples for the last hour, minute rollups before."""
    if not gpu_ids:
        return {}
    recent = GPUSample.objects.filter(gpu_id__in=gpu_ids, ts__gte=now - RAW_LOOKBACK, util_gpu__gte=threshold)
    found = {row["gpu_id"]: row["last"] for row in recent.values("gpu_id").annotate(last=Max("ts"))}
    older = GPUMinute.objects.filter(
        gpu_id__in=[i for i in gpu_ids if i not in found], bucket__gte=now - IDLE_LOOKBACK, util_gpu_max__gte=threshold
    )
    for row in older.values("gpu_id").annotate(last=Max("bucket")):
        found[row["gpu_id"]] = row["last"] + timedelta(minutes=1)
    return found


def idle_now(util_gpu: float | None, threshold: float) -> bool:
    return util_gpu is not None and util_gpu < threshold


def busy_now(util_gpu: float | None, threshold: float) -> bool:
    return util_gpu is not None and util_gpu >= threshold
