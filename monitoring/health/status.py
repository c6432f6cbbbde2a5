"""Why a GPU needs an admin's look now: its last burn-in failed, or its memory waits for or failed a repair.

The Fleet page's badge, the GPU page and the API say the same sentences.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from monitoring.health.models import BurnIn

FLAG_SENTENCES = {
    "remap_failure": "Row remapping failed: the GPU should be replaced.",
    "remap_pending": "A memory row remap is pending: reset the GPU to apply it.",
    "retired_pending": "A memory page retirement is pending: reset the GPU to apply it.",
}


def health_problems(state: Mapping, last_burnin: BurnIn | None) -> list[str]:
    """Sentences for each problem, worst first; empty when none is known."""
    problems = [sentence for key, sentence in FLAG_SENTENCES.items() if state.get(key)]
    if last_burnin is not None and not last_burnin.passed:
        problems.append(f"Last burn-in failed ({last_burnin.finished_at:%Y-%m-%d %H:%M} UTC): {last_burnin.reason}")
    return problems


def last_burnins(gpu_ids: Iterable[int]) -> dict[int, BurnIn]:
    """Each GPU's latest burn-in, in one query."""
    latest = BurnIn.objects.filter(gpu_id__in=list(gpu_ids)).order_by("gpu_id", "-finished_at", "-id")
    return {record.gpu_id: record for record in latest.distinct("gpu_id")}
