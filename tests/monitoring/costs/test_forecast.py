"""The budget forecast carries this month's spending to its end at the recent rate (the last 24 h)."""

from datetime import UTC, datetime, timedelta
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
        assert outlook.sentence().startswith("You pass the budget on 28 Nov (UTC)")


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


def test_spending_that_starts_mid_month_passes_the_budget_on_the_right_day():
    # Nothing until the 15th, then $30 an hour: on the 17th at noon, 2.5 days in, $1,800 spent.
    now = datetime(2026, 11, 17, 12, tzinfo=UTC)
    outlook = forecast(Decimal(1800), Decimal(10_000), now, recent=Decimal(720), recent_since=now - timedelta(hours=24))
    assert outlook.recent_per_day == Decimal("720.00")
    assert outlook.per_day == Decimal("109.09")  # the month-to-date average (16.5 days), shown beside it
    passes = now + timedelta(days=(10_000 - 1800) / 720)  # 28 Nov, about 16:00
    assert abs(outlook.passes_on - passes) < timedelta(days=1)
    assert outlook.passes_on.date() == datetime(2026, 11, 28).date()
    assert outlook.month_end_total == Decimal(1800 + 720 * 13.5).quantize(Decimal("0.01"))
    with time_machine.travel(now):
        sentence = outlook.sentence()
    assert sentence.startswith("You pass the budget on 28 Nov (UTC) at the rate of the last 24 h ($720.00 a day).")
    assert "month-to-date average is $109.09 a day" in sentence


def test_the_recent_window_stays_inside_the_month():
    now = datetime(2026, 11, 1, 6, 30, tzinfo=UTC)  # six and a half hours into the month
    outlook = forecast(Decimal(65), None, now, recent=Decimal(65))
    assert outlook.recent_per_day == Decimal("240.00")


def test_spending_that_began_an_hour_ago_is_not_spread_over_a_day():
    now = datetime(2026, 11, 20, 12, tzinfo=UTC)  # the first hour of use since install: $30
    outlook = forecast(Decimal(30), Decimal(1000), now, recent=Decimal(30), recent_since=now - timedelta(hours=1))
    assert outlook.recent_per_day == Decimal("720.00") and outlook.recent_hours == 1
    assert outlook.passes_on.date() == datetime(2026, 11, 21).date()
