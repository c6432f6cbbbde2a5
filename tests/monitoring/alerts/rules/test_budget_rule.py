"""Budget alerts at 50, 80 and 100 % of a project's or a researcher's monthly budget, one per threshold."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from inventory.models import Node
from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind, AlertSeverity, AlertStatus
from monitoring.alerts.models import Alert
from monitoring.costs.models import UserBudget
from monitoring.costs.rollup import rollup_usage
from tests.support.monitoring import T0
from tests.support.telemetry import process, stream

MIN = timedelta(minutes=1)


@pytest.fixture
def priced_gpu(gpu):
    """$1,000 per GPU-hour, so minutes of samples make visible money against the project's $1,000 budget."""
    Node.objects.filter(pk=gpu.node_id).update(cost_per_gpu_hour=Decimal("1000"))
    return gpu


def spend(gpu, clock, start_min: int, end_min: int, user: str = "alice"):
    stream(gpu, T0 + start_min * MIN, T0 + end_min * MIN, util=90, processes=[process(1, user)])
    clock.move_to(T0 + (end_min + 2) * MIN)  # the usage rollup folds minutes closed over a minute ago
    rollup_usage()
    return engine.evaluate()


def budget_alerts():
    return Alert.objects.filter(kind=AlertKind.BUDGET).order_by("opened_at", "id")


def test_crossing_half_the_budget_raises_one_alert(cast, priced_gpu, clock):
    spend(priced_gpu, clock, 0, 24)  # $400
    assert not budget_alerts().exists()
    spend(priced_gpu, clock, 24, 31)  # $516.67
    spend(priced_gpu, clock, 31, 33)
    alert = budget_alerts().get()
    assert alert.project == cast["project"] and alert.owner is None
    assert alert.severity == AlertSeverity.INFO
    assert alert.title == "Project vision passed 50 % of its 2026-11 budget"
    assert "$516.67 of its $1,000.00 budget (52 %)" in alert.message
    assert "You pass the budget on 10 Nov (UTC) at the rate of the last 1 h" in alert.message


def test_each_threshold_raises_its_own_alert(cast, priced_gpu, clock):
    spend(priced_gpu, clock, 0, 31)
    spend(priced_gpu, clock, 31, 49)
    spend(priced_gpu, clock, 49, 61)
    assert [a.details["threshold"] for a in budget_alerts()] == [50, 80, 100]
    assert budget_alerts().last().severity == AlertSeverity.CRITICAL


def test_crossing_several_thresholds_at_once_raises_one_alert_for_the_highest(cast, priced_gpu, clock):
    spend(priced_gpu, clock, 0, 50)  # $833: past 50 and 80 in one evaluation
    spend(priced_gpu, clock, 50, 52)
    assert [a.details["threshold"] for a in budget_alerts()] == [80]


def test_a_researcher_budget_alerts_the_researcher(cast, priced_gpu, clock):
    UserBudget.objects.create(user=cast["teammate"], monthly_budget=Decimal("100"))
    spend(priced_gpu, clock, 0, 4, user="bob")  # $66.67 of $100
    alert = budget_alerts().get(details__scope="user")
    assert alert.owner == cast["teammate"]
    assert alert.title == "bob passed 50 % of their 2026-11 budget"


def test_budget_alerts_resolve_when_the_month_ends(cast, priced_gpu, clock):
    spend(priced_gpu, clock, 0, 31)
    clock.move_to(datetime(2026, 12, 1, 0, 1, tzinfo=UTC))
    engine.evaluate()
    alert = budget_alerts().get()
    assert alert.status == AlertStatus.RESOLVED and alert.resolution == "The 2026-11 month ended."


def test_raising_the_budget_resolves_the_alert(cast, priced_gpu, clock):
    spend(priced_gpu, clock, 0, 31)
    cast["project"].monthly_budget = Decimal("5000")
    cast["project"].save()
    engine.evaluate()
    assert budget_alerts().get().status == AlertStatus.RESOLVED


def test_a_project_without_a_budget_raises_nothing(cast, priced_gpu, clock):
    cast["project"].monthly_budget = None
    cast["project"].save()
    spend(priced_gpu, clock, 0, 61)
    assert not budget_alerts().exists()
