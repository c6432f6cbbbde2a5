"""How busy a run kept its GPUs, from telemetry: the GPUs its processes were seen on (the process → run
mapping the ingest checked, ProcessSample.run_id), and those GPUs' samples while they were there.

NVML's GPU utilization is the share of the sample period in which a kernel ran, so its average over
the run is the share of the time the GPU was busy. A run that keeps its GPUs mostly idle gets a plain
warning once enough samples back it (RUN_BUSY_WARN_PCT, RUN_BUSY_MIN_SAMPLES).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db.models import Avg, Count, Max, Min
from django.utils import timezone

from monitoring.storage.models import GPUSample, ProcessSample
from training.models import Run


@dataclass(frozen=True)
class GPUUse:
    """One GPU during the run: its utilization and memory over the samples taken while the run was on it."""

    gpu: str
    samples: int
    util_avg: float | None
    util_max: float | None
    mem_avg_mib: float | None
    mem_max_mib: float | None
    memory_total_mib: int | None
    run_mem_max_mib: float | None  # the run's own processes on it, at most


@dataclass(frozen=True)
class Efficiency:
    gpus: list[GPUUse] = field(default_factory=list)

    @property
    def samples(self) -> int:
        return sum(use.samples for use in self.gpus)

    @property
    def busy_pct(self) -> float | None:
        """Average GPU utilization over every sample of every GPU, weighted by samples."""
        weighted = [(use.util_avg, use.samples) for use in self.gpus if use.util_avg is not None]
        count = sum(samples for _, samples in weighted)
        return sum(util * samples for util, samples in weighted) / count if count else None

    @property
    def warning(self) -> str:
        busy = self.busy_pct
        if busy is None or self.samples < settings.RUN_BUSY_MIN_SAMPLES or busy >= settings.RUN_BUSY_WARN_PCT:
            return ""
        return f"GPU busy {busy:.0f} % of the time: likely input-bound; try more data-loader workers."


def window(run: Run) -> tuple[datetime, datetime] | None:
    if run.started_at is None:
        return None
    return run.started_at, run.finished_at or timezone.now()


def run_efficiency(run: Run) -> Efficiency | None:
    """The run's GPU use from telemetry; None before it started. GPUs it was never seen on are left out."""
    span = window(run)
    if span is None:
        return None
    gpu_ids = list(run.gpus.values_list("pk", flat=True))
    # Bounded by the run's GPUs and time, so the (gpu, ts) primary key serves the look-up.
    seen = (
        ProcessSample.objects.filter(gpu_id__in=gpu_ids, ts__range=span, run_id=run.pk)
        .values("gpu_id")
        .annotate(first=Min("ts"), last=Max("ts"), run_mem=Max("mem_used_mib"))
    )
    uses = []
    gpus = {gpu.pk: gpu for gpu in run.gpus.select_related("node")}
    for row in sorted(seen, key=lambda row: str(gpus[row["gpu_id"]])):
        gpu = gpus[row["gpu_id"]]
        figures = GPUSample.objects.filter(gpu_id=gpu.pk, ts__range=(row["first"], row["last"])).aggregate(
            samples=Count("util_gpu"),
            util_avg=Avg("util_gpu"),
            util_max=Max("util_gpu"),
            mem_avg=Avg("mem_used_mib"),
            mem_max=Max("mem_used_mib"),
        )
        uses.append(
            GPUUse(
                gpu=str(gpu),
                samples=figures["samples"],
                util_avg=figures["util_avg"],
                util_max=figures["util_max"],
                mem_avg_mib=figures["mem_avg"],
                mem_max_mib=figures["mem_max"],
                memory_total_mib=gpu.memory_total_mib,
                run_mem_max_mib=row["run_mem"],
            )
        )
    return Efficiency(uses)
