"""A run's cost is its GPU-hours times the node's price, else the GPU model's; unknown prices are N/A."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from inventory.models import GPU
from tests.training.conftest import add_node, gpus_of
from training import run_cost
from training.choices import RunStatus
from training.models import Run

pytestmark = pytest.mark.django_db


def finished_run(owner, gpus, hours: float, **fields) -> Run:
    run = Run.objects.create(owner=owner, name="r", workload="digits_cnn", strategy="ddp", **fields)
    run.gpus.set(gpus)
    end = timezone.now()
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.SUCCEEDED, started_at=end - timedelta(hours=hours), finished_at=end
    )
    run.refresh_from_db()
    return run


def test_it_prices_gpu_hours_at_the_models_rate(cast, gpu_models):
    node = add_node("gpu-t4", gpus=2, model="T4")  # T4: $0.35 per GPU-hour
    run = finished_run(cast["owner"], gpus_of(node), hours=3)
    assert run_cost.run_gpu_hours(run) == pytest.approx(6)
    assert run_cost.run_cost(run) == Decimal("2.10")


def test_a_node_override_wins_over_the_model_price(cast, gpu_models):
    node = add_node("gpu-cheap", gpus=1, model="H100 SXM")
    node.cost_per_gpu_hour = Decimal("1.000")
    node.save()
    run = finished_run(cast["owner"], gpus_of(node), hours=2)
    assert run_cost.run_cost(run) == Decimal("2.00")


def test_a_gpu_without_any_price_makes_the_cost_unknown(cast, gpu_models):
    node = add_node("gpu-mystery", gpus=0)
    GPU.objects.create(node=node, index=0, uuid="GPU-mystery-0", model=None)
    run = finished_run(cast["owner"], gpus_of(node), hours=1)
    assert run_cost.run_cost(run) is None


def test_a_queued_run_costs_nothing_yet_and_a_running_one_costs_up_to_now(cast, gpu_models):
    node = add_node("gpu-live", gpus=1, model="T4")
    run = Run.objects.create(owner=cast["owner"], name="r", workload="digits_cnn", strategy="single")
    run.gpus.set(gpus_of(node))
    assert run_cost.run_cost(run) == Decimal("0.00")
    run.start()
    later = run.started_at + timedelta(hours=10)
    assert run_cost.run_cost(run, now=later) == Decimal("3.50")


def test_the_estimate_uses_the_median_time_per_epoch_of_similar_runs(cast, gpu_models):
    node = add_node("gpu-history", gpus=2, model="T4")
    for hours in (1, 2, 9):
        finished_run(cast["owner"], gpus_of(node), hours=hours, processes=2, hyperparameters={"epochs": 10})
    estimate = run_cost.estimate("digits_cnn", "ddp", 2, 5, gpus_of(node))
    assert estimate.seconds == pytest.approx(3600)  # median 2 h for 10 epochs → 1 h for 5
    assert estimate.cost == Decimal("0.70") and "3 finished runs" in estimate.basis
