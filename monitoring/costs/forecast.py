"""Budget forecasts: this month's spending carried to the month's end at the recent rate.

The recent rate is the spending of the last COST_FORECAST_RECENT_H hours (24) divided by the time since
the first of those hours that had any spending, so a project that started an hour ago is not diluted
over a day. The month-to-date average is shown beside it but is not the forecast: right after install,
or when a project starts spending mid-month, it is far below what the project spends now.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

DAY_S = Decimal(86400)


@dataclass(frozen=True)
class Forecast:
    """Where spending at the recent rate ends up, and when it passes the budget."""

    spent: Decimal
    budget: Decimal | None
    per_day: Decimal  # month-to-date average
    recent_per_day: Decimal  # over the last `recent_hours`
    recent_hours: int  # the window the recent rate was measured over (at most COST_FORECAST_RECENT_H)
    month_end_total: Decimal
    passes_on: datetime | None  # None when it stays within budget this month (or there is no budget)
    already_over: bool

    @property
    def used_pct(self) -> float | None:
        if not self.budget:
            return None
        return float(self.spent / self.budget * 100)

    @property
    def rate_words(self) -> str:
        return f"at the rate of the last {self.recent_hours} h (${self.recent_per_day:,.2f} a day)"

    def sentence(self) -> str:
        average = f"The month-to-date average is ${self.per_day:,.2f} a day."
        if self.budget is not None and self.already_over:
            return f"Over budget: ${self.spent:,.2f} of ${self.budget:,.2f} spent."
        if self.budget is None or self.passes_on is None:
            within = ", within the budget" if self.budget is not None else ""
            return f"The month ends at ${self.month_end_total:,.2f} {self.rate_words}{within}. {average}"
        when = timezone.localtime(self.passes_on)
        return f"You pass the budget on {when:%d %b} ({when:%Z}) {self.rate_words}. {average}"


def month_bounds(moment: datetime) -> tuple[datetime, datetime]:
    """The calendar month (in the site's time zone) containing `moment`."""
    local = timezone.localtime(moment)
    start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (start + timedelta(days=32)).replace(day=1)
    return start.astimezone(UTC), following.astimezone(UTC)


def recent_start(now: datetime) -> datetime:
    """Where the recent window starts: COST_FORECAST_RECENT_H back, on an hour (usage is hourly), in this month."""
    back = (now - timedelta(hours=settings.COST_FORECAST_RECENT_H)).replace(minute=0, second=0, microsecond=0)
    return max(back, month_bounds(now)[0])


def forecast(
    spent: Decimal,
    budget: Decimal | None,
    now: datetime,
    recent: Decimal | None = None,
    recent_since: datetime | None = None,
) -> Forecast:
    """`recent` is the spending since recent_start(now), which began at `recent_since` (its first hour).

    Without `recent` the month-to-date average stands in.
    """
    start, end = month_bounds(now)
    elapsed = Decimal((now - start).total_seconds())
    average = spent / elapsed if elapsed > 0 else Decimal(0)
    since = max(recent_since or recent_start(now), recent_start(now))
    window = Decimal((now - since).total_seconds()) if recent is not None else elapsed
    rate = recent / window if recent is not None and window > 0 else average
    total = spent + rate * Decimal((end - now).total_seconds())
    over = budget is not None and spent >= budget
    passes_on = None
    if budget is not None and not over and rate > 0:
        crossing = now + timedelta(seconds=float((budget - spent) / rate))
        passes_on = crossing if crossing < end else None
    return Forecast(
        spent=spent,
        budget=budget,
        per_day=(average * DAY_S).quantize(Decimal("0.01")),
        recent_per_day=(rate * DAY_S).quantize(Decimal("0.01")),
        recent_hours=max(1, round(window / 3600)),
        month_end_total=total.quantize(Decimal("0.01")),
        passes_on=passes_on,
        already_over=over,
    )
