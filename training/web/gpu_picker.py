"""What the launch form shows about each GPU: who holds it, who booked it, what it costs, and past speeds."""

from collections import defaultdict
from dataclasses import dataclass

from django.utils import timezone

from inventory import prices
from inventory.choices import NodeStatus
from inventory.models import GPU
from reservations.availability import in_use_by_others
from reservations.booking import current_holders
from training import run_cost
from training.choices import RunStatus
from training.models import Run


@dataclass
class GPURow:
    """A GPU as the launch form lists it."""

    gpu: GPU
    checked: bool
    rate: str | None
    held_by: Run | None
    booked_by: str | None
    in_use_by: list[str]

    @property
    def offline(self) -> bool:
        return self.gpu.node.status != NodeStatus.ONLINE

    @property
    def free(self) -> bool:
        """Free for this researcher now, as reservations/availability.py means it."""
        return not (self.offline or self.booked_by or self.in_use_by)


def holding_runs() -> dict[int, Run]:
    """GPU id → the starting or running run that holds it."""
    held = {}
    active = Run.objects.filter(status__in=RunStatus.active()).select_related("owner").prefetch_related("gpus")
    for run in active:
        for gpu in run.gpus.all():
            held[gpu.pk] = run
    return held


def current_bookings() -> dict[int, str]:
    """GPU id → who has booked it right now."""
    return {gpu_id: user.get_username() for gpu_id, (user, _) in current_holders().items()}


def gpu_rows(user, selected: set[str]) -> dict[str, list[GPURow]]:
    """Every GPU by node hostname, with what a researcher needs to pick one."""
    held, booked = holding_runs(), current_bookings()
    gpus = list(GPU.objects.select_related("node", "model", "state").order_by("node__hostname", "index"))
    in_use = in_use_by_others(gpus, user)
    rows: dict[str, list[GPURow]] = defaultdict(list)
    for gpu in gpus:
        rate = prices.rate_of(gpu)
        by = booked.get(gpu.pk)
        rows[gpu.node.hostname].append(
            GPURow(
                gpu=gpu,
                checked=str(gpu.pk) in selected,
                rate=None if rate is None else str(rate),
                held_by=held.get(gpu.pk),
                booked_by=by if by != user.get_username() else None,
                in_use_by=in_use.get(gpu.pk, []),
            )
        )
    return dict(rows)


def history_per_epoch(limit: int = 500) -> dict[str, float]:
    """Median seconds per epoch of recent successful runs, by ``workload|strategy|processes``."""
    runs = Run.objects.filter(status=RunStatus.SUCCEEDED, started_at__isnull=False).order_by("-finished_at")[:limit]
    seen: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        epochs = run.hyperparameters.get("epochs")
        if epochs:
            seen[f"{run.workload}|{run.strategy}|{run.processes}"].append(
                run_cost.run_seconds(run, timezone.now()) / epochs
            )
    return {key: sorted(values)[len(values) // 2] for key, values in seen.items()}
