"""What a run costs: GPU-hours × the price per GPU-hour (the node's override, else the GPU model's)."""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from inventory.models import GPU
from inventory.prices import rate_of
from training.models import Run

CENT = Decimal("0.01")
SECONDS_PER_HOUR = Decimal(3600)


def hourly_rate(gpus) -> Decimal | None:
    """USD per hour of holding all these GPUs; None when one of them has no price."""
    rates = [rate_of(gpu) for gpu in gpus]
    if any(rate is None for rate in rates):
        return None
    return sum(rates, Decimal(0))


def run_seconds(run: Run, now: datetime | None = None) -> float:
    """Seconds the run has held its GPUs: from its start to its end, or to now while it runs."""
    if run.started_at is None:
        return 0.0
    end = run.finished_at or now or timezone.now()
    return max(0.0, (end - run.started_at).total_seconds())


def run_gpu_hours(run: Run, now: datetime | None = None) -> float:
    return run_seconds(run, now) * len(run_gpus(run)) / 3600


def run_cost(run: Run, now: datetime | None = None) -> Decimal | None:
    """USD spent on the run so far (all of it once finished); None when a GPU has no price.

    A run on CPUs only costs nothing here: the fleet prices GPU-hours.
    """
    rate = hourly_rate(run_gpus(run))
    if rate is None:
        return None
    return (rate * Decimal(str(run_seconds(run, now))) / SECONDS_PER_HOUR).quantize(CENT)


def run_gpus(run: Run) -> list[GPU]:
    return list(run.gpus.select_related("node", "model"))


@dataclass(frozen=True)
class Estimate:
    """A launch's expected price: the hourly rate always, a total when past runs tell how long it takes."""

    rate_per_hour: Decimal | None
    seconds: float | None
    cost: Decimal | None
    basis: str

    def as_dict(self) -> dict:
        return {
            "rate_per_hour": None if self.rate_per_hour is None else str(self.rate_per_hour),
            "seconds": self.seconds,
            "cost": None if self.cost is None else str(self.cost),
            "basis": self.basis,
        }


def seconds_per_epoch(workload: str, strategy: str, processes: int, history: int = 20) -> tuple[float | None, int]:
    """Median seconds per epoch of recent successful runs like this one, and how many there were."""
    runs = Run.objects.filter(
        workload=workload, strategy=strategy, processes=processes, status="succeeded", started_at__isnull=False
    ).order_by("-finished_at")[:history]
    per_epoch = sorted(
        run_seconds(run) / run.hyperparameters["epochs"] for run in runs if run.hyperparameters.get("epochs")
    )
    if not per_epoch:
        return None, 0
    return per_epoch[len(per_epoch) // 2], len(per_epoch)


def estimate(workload: str, strategy: str, processes: int, epochs: int | None, gpus) -> Estimate:
    rate = hourly_rate(gpus)
    per_epoch, count = seconds_per_epoch(workload, strategy, processes) if epochs else (None, 0)
    if per_epoch is None:
        return Estimate(rate, None, None, "no finished run like this one yet")
    seconds = per_epoch * epochs
    cost = None if rate is None else (rate * Decimal(str(seconds)) / SECONDS_PER_HOUR).quantize(CENT)
    return Estimate(rate, seconds, cost, f"median of {count} finished run{'s' if count != 1 else ''} like this one")
