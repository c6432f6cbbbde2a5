"""What runs cost: GPU-hours × price while they hold their GPUs (training.run_cost.run_cost)."""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from training.models import Run
from training.run_cost import run_cost, run_gpu_hours


@dataclass(frozen=True)
class RunCost:
    """One run with its GPU-hours and its cost (None when a GPU has no price)."""

    run: Run
    gpu_hours: float
    cost: Decimal | None


def run_costs(start: datetime, end: datetime, now: datetime, limit: int = 100) -> list[RunCost]:
    """Runs that started in [start, end), newest first."""
    runs = (
        Run.objects.filter(started_at__gte=start, started_at__lt=end)
        .select_related("owner", "project")
        .prefetch_related("gpus__node", "gpus__model")
        .order_by("-started_at")[:limit]
    )
    return [RunCost(run, run_gpu_hours(run, now), run_cost(run, now)) for run in runs]
