"""Runs past their expected time: longer than ALERT_RUN_OVERDUE_FACTOR × the median of finished runs like them.

A run's expected time is the median seconds per epoch of recent successful runs of the same workload,
strategy and process count, times its epochs (training.run_cost); a run with no such history has none.
"""

from datetime import datetime

from django.conf import settings

from monitoring.alerts.choices import AlertKind, AlertSeverity
from monitoring.alerts.findings import Finding, RuleResult
from monitoring.alerts.models import Alert
from monitoring.alerts.rules.base import Rule
from training.choices import RunStatus
from training.models import Run
from training.run_cost import run_cost, run_seconds, seconds_per_epoch

KIND = AlertKind.RUN_OVERDUE


def expected_seconds(run: Run, medians: dict) -> tuple[float | None, int]:
    epochs = run.hyperparameters.get("epochs") if isinstance(run.hyperparameters, dict) else None
    if not isinstance(epochs, int) or epochs <= 0:
        return None, 0
    shape = (run.workload, run.strategy, run.processes)
    if shape not in medians:
        medians[shape] = seconds_per_epoch(*shape)
    per_epoch, count = medians[shape]
    return (None, 0) if per_epoch is None else (per_epoch * epochs, count)


class RunOverdueRule(Rule):
    """Tells a run's owner when it runs much longer than runs like it did."""

    kind = KIND
    escalates = True  # still open after ALERT_ESCALATE_AFTER_H: the admins hear about it

    def evaluate(self, now: datetime, open_alerts: list[Alert]) -> RuleResult:
        result, medians = RuleResult(), {}
        active = Run.objects.filter(status__in=RunStatus.active(), started_at__isnull=False).select_related("owner")
        for run in active:
            expected, count = expected_seconds(run, medians)
            elapsed = run_seconds(run, now)
            if expected and elapsed > settings.ALERT_RUN_OVERDUE_FACTOR * expected:
                result.findings.append(finding(run, elapsed, expected, count, now))
        firing = {f.key for f in result.findings}
        finished = dict(
            Run.objects.filter(pk__in=[a.details.get("run") for a in open_alerts]).values_list("pk", "status")
        )
        for alert in open_alerts:
            status = finished.get(alert.details.get("run"))
            if status in RunStatus.finished():
                result.resolved[alert.key] = f"The run ended ({RunStatus(status).label.lower()})."
            elif status is None and alert.key not in firing:
                result.resolved[alert.key] = "The run is gone."
        return result


def finding(run: Run, elapsed: float, expected: float, count: int, now: datetime) -> Finding:
    cost = run_cost(run, now)
    spent = "N/A" if cost is None else f"${cost:,.2f}"
    return Finding(
        key=f"{KIND}:{run.pk}",
        kind=KIND,
        severity=AlertSeverity.WARNING,
        title=f"Run #{run.pk} {run.name} is past its expected time",
        message=(
            f"Run #{run.pk} {run.name} has run {elapsed / 60:.0f} min; runs like it took {expected / 60:.0f} min "
            f"(median of {count}). It has cost {spent} so far. Check it is not stuck, or cancel it."
        ),
        owner_id=run.owner_id,
        project_id=run.project_id,
        details={"run": run.pk, "elapsed_s": round(elapsed), "expected_s": round(expected)},
    )
