"""Why a GPU needs an admin's look now: its last burn-in failed, or its memory waits for or failed a repair.

The Fleet page's badge, the GPU page and the API say the same sentences.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from monitoring.health.models import BurnIn

FLAGS = {  # key: (badge label, sentence)
    "remap_failure": ("Remap failed", "Row remapping failed: the GPU should be replaced."),
    "remap_pending": ("Remap pending", "A memory row remap is pending: reset the GPU to apply it."),
    "retired_pending": ("Retirement pending", "A memory page retirement is pending: reset the GPU to apply it."),
}


def health_marks(state: Mapping, last_burnin: BurnIn | None) -> list[dict]:
    """Each problem as {"label", "why"}, worst first; empty when none is known."""
    marks = [{"label": label, "why": why} for key, (label, why) in FLAGS.items() if state.get(key)]
    if last_burnin is not None and not last_burnin.passed:
        when = f"{last_burnin.finished_at:%Y-%m-%d %H:%M} UTC"
        marks.append({"label": "Burn-in failed", "why": f"Last burn-in failed ({when}): {last_burnin.reason}"})
    return marks


def health_problems(state: Mapping, last_burnin: BurnIn | None) -> list[str]:
    return [mark["why"] for mark in health_marks(state, last_burnin)]


def last_burnins(uuids: Iterable[str]) -> dict[str, BurnIn]:
    """Each GPU's latest burn-in with a verdict by UUID, in one query (one that did not finish judges nothing)."""
    latest = BurnIn.objects.judged().filter(gpu__uuid__in=list(uuids)).select_related("gpu")
    return {record.gpu.uuid: record for record in latest.order_by("gpu_id", "-finished_at", "-id").distinct("gpu_id")}
