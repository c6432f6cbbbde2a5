"""GPU families with dcgm-exporter's metric names, label names and units, from each GPU's latest state.

So the stock DCGM dashboards and alert rules work unchanged. NVLink throughput per link joins its
total's family with an `nvlink` label (the link's number), as dcgm-exporter writes its NVLink-entity
series; the total is the series without that label. A value a GPU could not report is left out,
never 0; a GPU whose node went silent, or that its node no longer reports, is left out too, so
Prometheus marks its series stale instead of repeating an old reading.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from inventory.models import GPU
from monitoring.agent.metrics import LINK_METRICS, METRICS, LinkMetric, current_links
from monitoring.ingest.presence import silence_limit
from monitoring.prometheus.exposition import Sample, family
from monitoring.storage import latest

FB_FREE = ("DCGM_FI_DEV_FB_FREE", "Device (framebuffer) memory free, in MiB.")


def fresh_gpus(node_ids: list[int] | None = None) -> list[GPU]:
    """GPUs of nodes heard from within the offline limit (server clock) that were in the node's latest reports."""
    limit = silence_limit() + timedelta(seconds=1)
    gpus = GPU.objects.filter(latest.ever_sampled(), node__last_seen__gte=timezone.now() - limit)
    if node_ids is not None:
        gpus = gpus.filter(node_id__in=node_ids)
    gpus = list(latest.with_state(gpus).select_related("node", "nvlink_state").order_by("node__hostname", "index"))
    newest = {}
    for gpu in gpus:
        sampled = latest.of(gpu).last_sample_at
        newest[gpu.node_id] = max(newest.get(gpu.node_id, sampled), sampled)
    # Compared on the agent's clock: a GPU the node stopped reporting drops out.
    return [gpu for gpu in gpus if latest.of(gpu).last_sample_at >= newest[gpu.node_id] - limit]


def gpu_labels(gpu: GPU) -> dict[str, str]:
    """dcgm-exporter's labels of one GPU."""
    return {
        "gpu": str(gpu.index),
        "UUID": gpu.uuid,
        "device": f"nvidia{gpu.index}",
        "modelName": gpu.name,
        "Hostname": gpu.node.hostname,
        "pci_bus_id": gpu.pci_bus_id,
        "DCGM_FI_DRIVER_VERSION": gpu.node.driver_version,
    }


def gpu_families(gpus: list[GPU]) -> list[str]:
    labelled = [(gpu, gpu_labels(gpu)) for gpu in gpus]
    lines = []
    for metric in METRICS:
        samples: list[Sample] = [
            (labels, scaled(getattr(latest.of(gpu), metric.key), metric.dcgm_scale)) for gpu, labels in labelled
        ]
        for link_metric in LINK_METRICS:
            if link_metric.total == metric.key:
                samples += link_samples(link_metric, labelled, metric.dcgm_scale)
        lines += family(metric.dcgm, metric.dcgm_help or metric.help, metric.prometheus, samples)
    free = [
        (labels, gpu.memory_total_mib - latest.of(gpu).mem_used_mib) for gpu, labels in labelled if has_free_memory(gpu)
    ]
    return lines + family(*FB_FREE, "gauge", free)


def link_samples(link_metric: LinkMetric, labelled: list[tuple[GPU, dict]], scale: int) -> list[Sample]:
    """One series per NVLink of each GPU that reports its links, labelled with the link's number."""
    return [
        ({**labels, "nvlink": str(number)}, scaled(link.get(link_metric.key), scale))
        for gpu, labels in labelled
        for number, link in enumerate(links_of(gpu))
    ]


def links_of(gpu: GPU) -> list[dict]:
    sampled = latest.of(gpu).last_sample_at
    return current_links(latest.nvlink(gpu), sampled.timestamp() if sampled else None) or []


def scaled(value: float | None, scale: int) -> float | None:
    return None if value is None else value * scale


def has_free_memory(gpu: GPU) -> bool:
    return gpu.memory_total_mib is not None and latest.of(gpu).mem_used_mib is not None
