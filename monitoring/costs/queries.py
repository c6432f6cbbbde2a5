"""Spending read from the usage rollup: by person, project, GPU model, month and day, and the idle part of it."""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Min, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncDay, TruncMonth
from django.utils import timezone

from monitoring.costs.models import UsageHour

ZERO = Decimal(0)


@dataclass(frozen=True)
class Line:
    """One row of a cost table."""

    label: str
    gpu_hours: float
    cost: Decimal
    idle_hours: float
    idle_cost: Decimal

    @property
    def idle_share(self) -> float | None:
        return None if not self.gpu_hours else self.idle_hours / self.gpu_hours * 100


TOTALS = {
    "seconds": Coalesce(Sum("gpu_seconds"), 0.0),
    "money": Coalesce(Sum("cost"), ZERO),
    "idle": Coalesce(Sum("idle_seconds"), 0.0),
    "idle_money": Coalesce(Sum("idle_cost"), ZERO),
}


def usage(start: datetime, end: datetime, scope: Q | None = None) -> QuerySet:
    rows = UsageHour.objects.filter(bucket__gte=start, bucket__lt=end)
    return rows.filter(scope) if scope is not None else rows


def lines(rows: QuerySet, field: str, unknown: str) -> list[Line]:
    grouped = rows.values(field).annotate(**TOTALS).order_by("-money", field)
    return [line(row.get(field) or unknown, row) for row in grouped]


def line(label: str, row: dict) -> Line:
    return Line(label, row["seconds"] / 3600, row["money"], row["idle"] / 3600, row["idle_money"])


def total(rows: QuerySet) -> Line:
    return line("Total", rows.aggregate(**TOTALS))


def by_user(start: datetime, end: datetime) -> list[Line]:
    """Per researcher; OS users without an account are listed by their OS name."""
    found = lines(usage(start, end).filter(user__isnull=False), "user__username", "")
    found += [
        Line(f"{x.label} (no account)", x.gpu_hours, x.cost, x.idle_hours, x.idle_cost)
        for x in lines(usage(start, end).filter(user__isnull=True), "os_user", "unknown")
    ]
    return sorted(found, key=lambda x: -x.cost)


def by_project(start: datetime, end: datetime) -> list[Line]:
    return lines(usage(start, end), "project__name", "No project")


def by_model(start: datetime, end: datetime) -> list[Line]:
    return lines(usage(start, end), "gpu__model__name", "Unknown model")


def by_month(start: datetime, end: datetime, scope: Q | None = None) -> list[Line]:
    month = TruncMonth("bucket", tzinfo=timezone.get_current_timezone())
    grouped = usage(start, end, scope).annotate(month=month).values("month").annotate(**TOTALS).order_by("month")
    return [line(row["month"].strftime("%Y-%m"), row) for row in grouped]


def daily(start: datetime, end: datetime, scope: Q | None = None) -> list[tuple[str, Decimal]]:
    """(day, cost) for each day with spending, in the site's time zone."""
    day = TruncDay("bucket", tzinfo=timezone.get_current_timezone())
    grouped = usage(start, end, scope).annotate(day=day).values("day").annotate(**TOTALS).order_by("day")
    return [(row["day"].date().isoformat(), row["money"]) for row in grouped]


def spent(start: datetime, end: datetime, scope: Q) -> Decimal:
    return usage(start, end, scope).aggregate(money=TOTALS["money"])["money"]


def spent_by(start: datetime, end: datetime, field: str) -> dict[int, Decimal]:
    """Spending per user_id or project_id over the range, one query."""
    grouped = usage(start, end).filter(**{f"{field}__isnull": False}).values(field).annotate(money=TOTALS["money"])
    return {row[field]: row["money"] for row in grouped}


def recent_by(start: datetime, end: datetime, field: str) -> dict[int, tuple[Decimal, datetime]]:
    """Per user_id or project_id: spending over the range and the hour it began, one query."""
    grouped = (
        usage(start, end)
        .filter(**{f"{field}__isnull": False})
        .values(field)
        .annotate(money=TOTALS["money"], first=Min("bucket"))
    )
    return {row[field]: (row["money"], row["first"]) for row in grouped}


def recent(start: datetime, end: datetime, scope: Q) -> tuple[Decimal, datetime | None]:
    """Spending over the range and the hour it began (None when nothing was spent)."""
    found = usage(start, end, scope).aggregate(money=TOTALS["money"], first=Min("bucket"))
    return found["money"], found["first"]
