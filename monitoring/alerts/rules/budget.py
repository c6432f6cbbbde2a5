"""Budgets: one alert when a project's or a researcher's spending this month crosses 50, 80 or 100 % of its budget.

Crossing several thresholds at once raises one alert, for the highest; each alert resolves when the
month ends (or when the budget is raised above the spending).
"""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from inventory.models import Project
from monitoring.alerts.choices import AlertKind, AlertSeverity
from monitoring.alerts.findings import Finding, RuleResult
from monitoring.alerts.models import Alert
from monitoring.alerts.rules.base import Rule
from monitoring.costs.forecast import forecast, month_bounds, recent_start
from monitoring.costs.models import UserBudget
from monitoring.costs.queries import recent_by, spent_by

KIND = AlertKind.BUDGET


@dataclass(frozen=True)
class Scope:
    """A project or a researcher with a monthly budget and this month's spending."""

    kind: str  # "project" or "user"
    id: int
    name: str
    budget: Decimal
    spent: Decimal
    recent: tuple[Decimal, datetime | None]  # spending since forecast.recent_start, and the hour it began

    @property
    def used_pct(self) -> float:
        if self.budget == 0:
            return float("inf") if self.spent > 0 else 0.0
        return float(self.spent / self.budget * 100)

    def key(self, month: str, threshold: int) -> str:
        return f"{KIND}:{self.kind}:{self.id}:{month}:{threshold}"


def scopes(now: datetime) -> list[Scope]:
    start, end = month_bounds(now)
    by_project, by_user = spent_by(start, end, "project_id"), spent_by(start, end, "user_id")
    since = recent_start(now)
    recent_project, recent_user = recent_by(since, now, "project_id"), recent_by(since, now, "user_id")
    zero, nothing = Decimal(0), (Decimal(0), None)
    found = [
        Scope("project", p.id, p.name, p.monthly_budget, by_project.get(p.id, zero), recent_project.get(p.id, nothing))
        for p in Project.objects.filter(monthly_budget__isnull=False)
    ]
    found += [
        Scope(
            "user",
            b.user_id,
            b.user.get_username(),
            b.monthly_budget,
            by_user.get(b.user_id, zero),
            recent_user.get(b.user_id, nothing),
        )
        for b in UserBudget.objects.select_related("user")
    ]
    return found


def severity_for(threshold: int) -> AlertSeverity:
    if threshold >= 100:
        return AlertSeverity.CRITICAL
    return AlertSeverity.WARNING if threshold >= 80 else AlertSeverity.INFO


def threshold_of(key: str) -> int:
    return int(key.rsplit(":", 1)[1])


class BudgetRule(Rule):
    """Raises the highest newly crossed threshold per budget and month."""

    kind = KIND

    def evaluate(self, now: datetime, open_alerts: list[Alert]) -> RuleResult:
        month = month_label(now)
        seen = set(Alert.objects.filter(kind=KIND, key__contains=f":{month}:").values_list("key", flat=True))
        open_keys = {a.key for a in open_alerts}
        current = scopes(now)
        result = RuleResult()
        for scope in current:
            result.findings += findings_for(scope, month, seen, open_keys, now)
        result.resolved = resolutions(open_alerts, {prefix_of(s, month): s for s in current}, month)
        return result


def month_label(now: datetime) -> str:
    return timezone.localtime(month_bounds(now)[0]).strftime("%Y-%m")


def findings_for(scope: Scope, month: str, seen: set[str], open_keys: set[str], now: datetime) -> list[Finding]:
    crossed = [t for t in settings.BUDGET_THRESHOLDS_PCT if scope.used_pct >= t]
    still = [t for t in crossed if scope.key(month, t) in open_keys]
    top = max(crossed, default=None)
    prefix = prefix_of(scope, month) + ":"
    superseded = top is None or any(threshold_of(k) >= top for k in seen if k.startswith(prefix))
    wanted = still if superseded else [*still, top]
    return [finding(scope, month, t, now) for t in wanted]


def finding(scope: Scope, month: str, threshold: int, now: datetime) -> Finding:
    who = f"Project {scope.name}" if scope.kind == "project" else scope.name
    whose = "its" if scope.kind == "project" else "their"
    outlook = forecast(scope.spent, scope.budget, now, *scope.recent).sentence()
    pct = "over 100" if scope.used_pct == float("inf") else f"{scope.used_pct:.0f}"
    return Finding(
        key=scope.key(month, threshold),
        kind=KIND,
        severity=severity_for(threshold),
        title=f"{who} passed {threshold} % of {whose} {month} budget",
        message=f"{who} has spent ${scope.spent:,.2f} of {whose} ${scope.budget:,.2f} budget ({pct} %). {outlook}",
        owner_id=scope.id if scope.kind == "user" else None,
        project_id=scope.id if scope.kind == "project" else None,
        details={"scope": scope.kind, "month": month, "threshold": threshold, "spent": str(scope.spent)},
    )


def prefix_of(scope: Scope, month: str) -> str:
    """The key of a budget and month, without the threshold."""
    return scope.key(month, 0).rsplit(":", 1)[0]


def resolutions(open_alerts: list[Alert], scopes_by_prefix: dict, month: str) -> dict[str, str]:
    reasons = {}
    for alert in open_alerts:
        if alert.details.get("month") != month:
            reasons[alert.key] = f"The {alert.details.get('month', 'budget')} month ended."
            continue
        scope = scopes_by_prefix.get(alert.key.rsplit(":", 1)[0])
        threshold = threshold_of(alert.key)
        if scope is None:
            reasons[alert.key] = "The budget was removed."
        elif scope.used_pct < threshold:
            reasons[alert.key] = f"Spending is under {threshold} % of the budget again (the budget changed)."
    return reasons
