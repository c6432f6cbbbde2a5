"""The budget forecast extrapolates this month's spending at its constant average rate."""

from datetime import UTC, datetime
from decimal import Decimal

import time_machine
from django.utils import timezone

from monitoring.costs.forecast import forecast, month_bounds


def test_a_constant_rate_passes_the_budget_on_the_right_day():
    now = datetime(2026, 11, 10, tzinfo=UTC)  # 9 days in, $100 a day
    outlook = forecast(Decimal(900), Decimal(2700), now)
    assert outlook.per_day == Decimal("100.00")
    assert outlook.passes_on == datetime(2026, 11, 28, tzinfo=UTC)
    assert outlook.month_end_total == Decimal("3000.00")
    with time_machine.travel(now):
        assert outlook.sentence() == "At the current rate you pass the budget on 28 Nov."


def test_spending_that_stays_under_the_budget_has_no_date():
    outlook = forecast(Decimal(900), Decimal(5000), datetime(2026, 11, 10, tzinfo=UTC))
    assert outlook.passes_on is None
    assert "within the budget" in outlook.sentence()


def test_a_budget_already_spent_says_so():
    outlook = forecast(Decimal(2800), Decimal(2700), datetime(2026, 11, 20, tzinfo=UTC))
    assert outlook.already_over and outlook.passes_on is None
    assert outlook.sentence().startswith("Over budget")


def test_nothing_spent_means_no_date():
    outlook = forecast(Decimal(0), Decimal(100), datetime(2026, 11, 20, tzinfo=UTC))
    assert outlook.passes_on is None and outlook.month_end_total == 0


def test_months_follow_the_site_time_zone(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    with timezone.override("Europe/Berlin"):
        start, end = month_bounds(datetime(2026, 11, 10, tzinfo=UTC))
    assert start == datetime(2026, 10, 31, 23, tzinfo=UTC)
    assert end == datetime(2026, 11, 30, 23, tzinfo=UTC)


def test_the_rate_counts_real_hours_across_a_dst_change():
    # Berlin's October 2026 runs from 30 Sep 22:00 to 31 Oct 23:00 UTC: 745 hours, one more than 31 days.
    with timezone.override("Europe/Berlin"):
        outlook = forecast(Decimal(744), Decimal(10_000), datetime(2026, 10, 31, 22, tzinfo=UTC))
    assert outlook.per_day == Decimal("24.00")
    assert outlook.month_end_total == Decimal("745.00")
