"""Budget forecasts: a constant-rate extrapolation of this calendar month's spending so far."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.utils import timezone


@dataclass(frozen=True)
class Forecast:
    """Where spending at the month's average rate so far ends up, and when it passes the budget."""

    spent: Decimal
    budget: Decimal | None
    per_day: Decimal
    month_end_total: Decimal
    passes_on: datetime | None  # None when it stays within budget this month (or there is no budget)
    already_over: bool

    @property
    def used_pct(self) -> float | None:
        if not self.budget:
            return None
        return float(self.spent / self.budget * 100)

    def sentence(self) -> str:
        if self.budget is None:
            return f"At the current rate the month ends at ${self.month_end_total:,.2f}."
        if self.already_over:
            return f"Over budget: ${self.spent:,.2f} of ${self.budget:,.2f} spent."
        if self.passes_on is None:
            return f"At the current rate the month ends at ${self.month_end_total:,.2f}, within the budget."
        return f"At the current rate you pass the budget on {timezone.localtime(self.passes_on):%d %b}."


def month_bounds(moment: datetime) -> tuple[datetime, datetime]:
    """The calendar month (in the site's time zone) containing `moment`."""
    local = timezone.localtime(moment)
    start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (start + timedelta(days=32)).replace(day=1)
    return start.astimezone(UTC), following.astimezone(UTC)


def forecast(spent: Decimal, budget: Decimal | None, now: datetime) -> Forecast:
    start, end = month_bounds(now)
    elapsed = (now - start).total_seconds()
    month = (end - start).total_seconds()
    per_second = spent / Decimal(elapsed) if elapsed > 0 else Decimal(0)
    total = per_second * Decimal(month)
    passes_on = None
    over = budget is not None and spent >= budget
    if budget is not None and not over and per_second > 0:
        crossing = start + timedelta(seconds=float(budget / per_second))
        passes_on = crossing if crossing < end else None
    return Forecast(
        spent=spent,
        budget=budget,
        per_day=(per_second * 86400).quantize(Decimal("0.01")),
        month_end_total=total.quantize(Decimal("0.01")),
        passes_on=passes_on,
        already_over=over,
    )
