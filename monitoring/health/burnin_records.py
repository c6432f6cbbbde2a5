"""A finished burn-in run becomes one health record per GPU: speed against the datasheet, the result check,
and the peaks of the GPU's own telemetry over the run. A burn-in that did not run to its end (cancelled,
lost, or failed before its processes exited) leaves a record without a verdict that says why.

Records are stored as the run ends, whatever ended it: training's ``run_finished`` signal, sent inside
the transaction that ends the run.

Ranks map to GPUs the way the node worker placed them: node shares in rank order, and within a node
the share's NVML indexes in order (LOCAL_RANK picks the device among CUDA_VISIBLE_DEVICES).
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Count, Max, Min
from django.dispatch import receiver
from django.utils import timezone

from inventory.models import GPU
from monitoring.health.models import BurnIn
from monitoring.storage.models import GPUSample
from training.choices import RunStatus
from training.models import Run, run_finished
from training.workloads import WORKLOADS

log = logging.getLogger(__name__)

PEAKS = {
    "peak_temp_c": Max("temp_c"),
    "peak_power_w": Max("power_w"),
    "peak_sm_clock_mhz": Max("sm_clock_mhz"),
    "lowest_sm_clock_mhz": Min("sm_clock_mhz"),
    "peak_mem_clock_mhz": Max("mem_clock_mhz"),
    "samples": Count("ts"),
}


def records_health(run: Run) -> bool:
    workload = WORKLOADS.get(run.workload)
    return workload is not None and workload.records_health


@receiver(run_finished, dispatch_uid="monitoring.health.burnin_records")
def on_run_finished(sender, run: Run, **kwargs) -> None:
    """A burn-in's records as its run ends; failing to write them must not undo the run's end state."""
    if not records_health(run):
        return
    try:
        with transaction.atomic():
            record_burnin(run)
    except DatabaseError:
        log.exception("run %s: could not store its health records", run.pk)


def record_burnin(run: Run) -> list[BurnIn]:
    """Store the run's records (once): judged when the burn-in ran to its end, else saying it did not finish."""
    if not records_health(run) or run.status not in RunStatus.finished():
        return []
    gpus = placed_gpus(run)
    devices = run.result.get("devices") if isinstance(run.result, dict) else None
    devices = devices if isinstance(devices, list) else []
    start = run.first_step_at or run.started_at
    end = run.finished_at or timezone.now()
    peaks = telemetry_peaks([gpu.pk for gpu in gpus], start, end)
    records = []
    for rank, gpu in enumerate(gpus):
        device = devices[rank] if rank < len(devices) and isinstance(devices[rank], dict) else None
        record = BurnIn(gpu=gpu, run=run, started_at=start, finished_at=end, size=_size(run))
        if ran_to_its_end(run):
            judge(record, device, gpu, run)
        else:
            record.passed, record.reason = None, unfinished_reason(run)
        for field, value in peaks.get(gpu.pk, {}).items():
            setattr(record, field, value)
        records.append(record)
    return BurnIn.objects.bulk_create(records, ignore_conflicts=True)


def ran_to_its_end(run: Run) -> bool:
    """Its processes exited by themselves (a failure with their exit code): the result is the GPU's to answer for.
    A cancel, a lost node worker or a failure to start them says nothing about the GPU."""
    return run.status == RunStatus.SUCCEEDED or (run.status == RunStatus.FAILED and run.exit_code is not None)


def unfinished_reason(run: Run) -> str:
    why = _first_line(run.error) or "no reason was given"
    return f"The burn-in did not finish ({run.get_status_display().lower()}): {why}"


def placed_gpus(run: Run) -> list[GPU]:
    """The run's GPUs in global rank order."""
    by_place = {(gpu.node_id, gpu.index): gpu for gpu in run.gpus.select_related("model")}
    ordered = []
    for part in run.nodes.order_by("rank"):
        ordered += [by_place[(part.node_id, i)] for i in part.gpu_indexes if (part.node_id, i) in by_place]
    return ordered


def judge(record: BurnIn, device: dict | None, gpu: GPU, run: Run) -> None:
    """Fill the measures and the verdict from one rank's report."""
    if device is None:
        why = _first_line(run.error) or "no report"
        record.passed, record.reason = False, f"The burn-in ended without a result: {why}"
        return
    record.device = str(device.get("device") or "")[:32]
    record.gflops = _number(device.get("gflops"))
    record.iterations = _whole(device.get("iterations"))
    record.mismatches = _whole(device.get("mismatches"))
    record.worst_error_ratio = _number(device.get("worst_error_ratio"))
    record.datasheet_gflops = gpu.model.fp32_tflops * 1000 if gpu.model else None
    failures = []
    if record.mismatches != 0:
        wrong = "an unknown number of" if record.mismatches is None else record.mismatches
        failures.append(f"result check: {wrong} wrong elements")
    speed_failure, note = speed_verdict(record)
    failures += [speed_failure] if speed_failure else []
    record.passed = not failures
    record.reason = "; ".join([*failures, *([note] if note else [])])


def speed_verdict(record: BurnIn) -> tuple[str, str]:
    """(failure, note) against the datasheet: judged only when the GPU itself multiplied and its model is known."""
    if not record.device.startswith("cuda"):
        return "", "speed not judged: measured on the CPU, not on the GPU"
    if record.datasheet_gflops is None or record.gflops is None:
        return "", "speed not judged: no datasheet figure for this GPU's model"
    record.fraction_of_peak = record.gflops / record.datasheet_gflops
    needed = settings.BURNIN_MIN_PERCENT_OF_PEAK
    if record.fraction_of_peak * 100 < needed:
        return (
            f"speed: {record.gflops:.0f} GFLOP/s is {record.fraction_of_peak:.0%} of the datasheet's "
            f"{record.datasheet_gflops:.0f} (at least {needed:g} % needed)"
        ), ""
    return "", ""


def telemetry_peaks(gpu_ids: list[int], start: datetime | None, end: datetime) -> dict[int, dict]:
    if not gpu_ids or start is None:
        return {}
    rows = GPUSample.objects.filter(gpu_id__in=gpu_ids, ts__gte=start, ts__lte=end).values("gpu_id")
    return {row.pop("gpu_id"): row for row in rows.annotate(**PEAKS).order_by()}


def _first_line(text: str) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:300] if lines else ""


def _size(run: Run) -> int | None:
    return _whole((run.environment or {}).get("size"))


def _number(value) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _whole(value) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
