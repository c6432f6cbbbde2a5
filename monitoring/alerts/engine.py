"""One evaluation of every rule: open new alerts, note the ones still true, resolve the cleared, escalate the old."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from monitoring.alerts import lifecycle, memo, outbox
from monitoring.alerts.choices import AlertStatus
from monitoring.alerts.findings import RuleResult
from monitoring.alerts.models import Alert
from monitoring.alerts.rules.base import Rule
from monitoring.alerts.rules.bookings import BookingIdleRule, BookingNoticeRule, SquattingRule
from monitoring.alerts.rules.budget import BudgetRule
from monitoring.alerts.rules.health import HealthRule
from monitoring.alerts.rules.idle.rule import IdleProcessRule
from monitoring.alerts.rules.overdue_runs import RunOverdueRule

# The rules, evaluated in this order; each is a Rule (monitoring/alerts/rules/base.py).
RULES = [
    IdleProcessRule(),
    BookingIdleRule(),
    SquattingRule(),
    BookingNoticeRule(),
    RunOverdueRule(),
    HealthRule(),
    BudgetRule(),
]
LOCK_ID = 0x6A1E27  # one evaluation at a time across workers (pg advisory lock)


@dataclass
class Summary:
    """What one evaluation did."""

    opened: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    escalated: list[str] = field(default_factory=list)
    still_open: int = 0
    skipped: bool = False


def evaluate(now: datetime | None = None) -> Summary:
    """Evaluate every rule once; a concurrent evaluation makes this one skip."""
    now = now or timezone.now()
    with transaction.atomic(), memo.evaluation():
        if not try_lock():
            return Summary(skipped=True)
        open_alerts = list(Alert.objects.exclude(status=AlertStatus.RESOLVED))
        summary = Summary()
        for rule in RULES:
            mine = [a for a in open_alerts if a.kind in kinds_of(rule)]
            apply(rule, rule.evaluate(now, mine), mine, now, summary)
        summary.escalated = escalate(now)
        summary.still_open = Alert.objects.exclude(status=AlertStatus.RESOLVED).count()
        outbox.announce_moment(now)  # every event of this evaluation was stored at `now`
    return summary


def kinds_of(rule: Rule) -> set:
    return set(rule.kinds)


# Alerts about a person's own use go to the admins when they stay open too long; each rule says whether its do.
ESCALATING = {kind for rule in RULES if getattr(rule, "escalates", False) for kind in kinds_of(rule)}


def try_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [LOCK_ID])
        return cursor.fetchone()[0]


def apply(rule: Rule, result: RuleResult, open_alerts: list[Alert], now: datetime, summary: Summary) -> None:
    by_key = {a.key: a for a in open_alerts}
    new = {f.key: f for f in result.findings if f.key not in by_key}
    opened = lifecycle.open_alerts(list(new.values()), now)
    firing = [by_key[f.key] for f in result.findings if f.key in by_key]
    Alert.objects.filter(pk__any=[a.pk for a in firing]).update(last_seen_at=now)
    # A notice opens and resolves in one pass: it is news, not a lasting condition.
    cleared = [by_key[key] for key in result.resolved if key in by_key] + [
        a for a in opened if a.key in result.resolved
    ]
    lifecycle.resolve_alerts(cleared, result.resolved, now)
    rule.follow_up(result, firing, now)
    summary.opened += list(new)
    summary.resolved += [a.key for a in cleared]


def escalate(now: datetime) -> list[str]:
    cutoff = now - timedelta(hours=settings.ALERT_ESCALATE_AFTER_H)
    due = list(
        Alert.objects.exclude(status=AlertStatus.RESOLVED).filter(
            kind__in=ESCALATING, escalated_at__isnull=True, opened_at__lte=cutoff
        )
    )
    hours = f"{settings.ALERT_ESCALATE_AFTER_H:g}"
    lifecycle.escalate_alerts(due, f"Still open after {hours} h: escalated to the admins.", now)
    return [a.key for a in due]


@shared_task(name="monitoring.tasks.evaluate_alerts", ignore_result=True)
def evaluate_alerts() -> dict:
    """Every rule once (beat, every ALERT_EVAL_INTERVAL_S); people are told from its events after it commits."""
    summary = evaluate()
    return {
        "opened": len(summary.opened),
        "resolved": len(summary.resolved),
        "escalated": len(summary.escalated),
        "skipped": summary.skipped,
    }
