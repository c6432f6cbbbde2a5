"""One month's cost report: spending by person, project and GPU model, history, budgets with forecasts, waste."""

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import Q
from django.utils import timezone

from inventory.models import Project
from monitoring.costs import queries
from monitoring.costs.bookings import BookingCost, booking_costs
from monitoring.costs.forecast import Forecast, forecast, month_bounds, recent_start
from monitoring.costs.idle_report import IdleTotal, UnderusedRows, idle_in_stretches
from monitoring.costs.models import UserBudget
from monitoring.costs.runs import RunCost, run_costs

MONTH = re.compile(r"^(\d{4})-(\d{2})$")


class BadMonth(ValueError):
    """A month that is not YYYY-MM."""


def parse_month(text: str | None, now: datetime) -> tuple[datetime, datetime]:
    """The month named YYYY-MM (the current month when empty), as UTC bounds."""
    if not text:
        return month_bounds(now)
    match = MONTH.match(text)
    if not match or not 1 <= int(match[2]) <= 12 or int(match[1]) < 2000:
        raise BadMonth(f"{text!r} is not a month; use YYYY-MM, e.g. {timezone.localtime(now):%Y-%m}.")
    local = timezone.make_aware(datetime(int(match[1]), int(match[2]), 15))
    return month_bounds(local)


@dataclass
class Budget:
    """A budget, what was spent against it in the month, and (this month only) the forecast."""

    key: str
    name: str
    amount: Decimal
    spent: Decimal
    forecast: Forecast | None
    cumulative: list[tuple[str, float]] = field(default_factory=list)

    @property
    def used_pct(self) -> float | None:
        return None if not self.amount else float(self.spent / self.amount * 100)


@dataclass
class Report:
    """Everything the Costs page and /api/costs/ show for one month."""

    month: str
    start: datetime
    end: datetime
    is_current: bool
    total: queries.Line
    by_user: list[queries.Line]
    by_project: list[queries.Line]
    by_model: list[queries.Line]
    history: list[queries.Line]
    budgets: list[Budget]
    idle_by_user: list[queries.Line]
    idle_in_stretches: IdleTotal  # idle in stretches at least as long as the window; total.idle_* is every sample
    underused: UnderusedRows  # paged where shown: it can run to thousands
    bookings: list[BookingCost]
    runs: list[RunCost]


def cumulative(start: datetime, end: datetime, scope: Q) -> list[tuple[str, float]]:
    running, points = Decimal(0), []
    for day, cost in queries.daily(start, end, scope):
        running += cost
        points.append((day, float(running)))
    return points


def budgets_for(user, start: datetime, end: datetime, now: datetime, is_current: bool) -> list[Budget]:
    scopes = [
        (f"project:{p.id}", f"Project {p.name}", p.monthly_budget, Q(project=p))
        for p in Project.objects.filter(monthly_budget__isnull=False)
    ]
    personal = UserBudget.objects.select_related("user")
    if not user.is_staff:
        personal = personal.filter(user=user)
    scopes += [(f"user:{b.user_id}", b.user.get_username(), b.monthly_budget, Q(user_id=b.user_id)) for b in personal]
    found = []
    for key, name, amount, scope in scopes:
        spent = queries.spent(start, end, scope)
        recent, since = queries.recent(recent_start(now), now, scope) if is_current else (None, None)
        outlook = forecast(spent, amount, now, recent, since) if is_current else None
        found.append(Budget(key, name, amount, spent, outlook, cumulative(start, end, scope)))
    return found


def build(user, month: str | None, now: datetime | None = None) -> Report:
    now = now or timezone.now()
    start, end = parse_month(month, now)
    is_current = start <= now < end
    history_start = month_bounds(start - timedelta(days=334))[0]
    rows = queries.usage(start, end)
    by_user = queries.by_user(start, end)
    return Report(
        month=timezone.localtime(start).strftime("%Y-%m"),
        start=start,
        end=end,
        is_current=is_current,
        total=queries.total(rows),
        by_user=by_user,
        by_project=queries.by_project(start, end),
        by_model=queries.by_model(start, end),
        history=queries.by_month(history_start, end),
        budgets=budgets_for(user, start, end, now, is_current),
        idle_by_user=sorted([x for x in by_user if x.idle_hours], key=lambda x: -x.idle_cost),
        idle_in_stretches=idle_in_stretches(start, end),
        underused=UnderusedRows(start, end),
        bookings=booking_costs(start, end),
        runs=run_costs(start, end, now),
    )


def chart_data(report: Report) -> dict:
    """What static/js/costs.js draws with Plotly."""
    end_local = timezone.localtime(report.end - timedelta(seconds=1))
    return {
        "history": {"months": [x.label for x in report.history], "cost": [float(x.cost) for x in report.history]},
        "projects": {"names": [x.label for x in report.by_project], "cost": [float(x.cost) for x in report.by_project]},
        "users": {"names": [x.label for x in report.by_user], "cost": [float(x.cost) for x in report.by_user]},
        "models": {"names": [x.label for x in report.by_model], "cost": [float(x.cost) for x in report.by_model]},
        "month_start": timezone.localtime(report.start).date().isoformat(),
        "month_end": end_local.date().isoformat(),
        "budgets": [
            {
                "key": b.key,
                "name": b.name,
                "amount": float(b.amount),
                "days": [d for d, _ in b.cumulative],
                "cumulative": [v for _, v in b.cumulative],
                "month_end_forecast": float(b.forecast.month_end_total) if b.forecast else None,
                "forecast_label": f"Forecast (rate of the last {b.forecast.recent_hours} h)" if b.forecast else "",
            }
            for b in report.budgets
        ],
        "now": datetime.now(UTC).isoformat(),
    }
