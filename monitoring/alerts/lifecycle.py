"""Alert state changes, each one stored as an AlertEvent row that the dispatcher later claims."""

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from fleet.choices import AlertEventKind, AlertStatus
from monitoring.alerts.findings import Finding
from monitoring.alerts.models import Alert, AlertEvent


class AlertActionError(Exception):
    """An action that does not fit the alert's state (e.g. acknowledging a resolved alert)."""


def event(alert: Alert, kind: AlertEventKind, reason: str = "", old: str = "", actor=None, now=None) -> AlertEvent:
    return AlertEvent(
        alert=alert,
        kind=kind,
        old_status=old or alert.status,
        new_status=alert.status,
        reason=reason,
        actor=actor,
        created=now or timezone.now(),
    )


def open_alerts(findings: list[Finding], now) -> list[Alert]:
    """Create one alert per finding and its `opened` event; the caller knows none of the keys is open."""
    alerts = Alert.objects.bulk_create(
        [
            Alert(
                key=f.key,
                kind=f.kind,
                severity=f.severity,
                title=f.title,
                message=f.message,
                owner_id=f.owner_id,
                project_id=f.project_id,
                node_id=f.node_id,
                gpu_id=f.gpu_id,
                details=f.details,
                opened_at=now,
                last_seen_at=now,
            )
            for f in findings
        ]
    )
    AlertEvent.objects.bulk_create([event(a, AlertEventKind.OPENED, a.message, old="", now=now) for a in alerts])
    return alerts


def resolve_alerts(alerts: list[Alert], reasons: dict[str, str], now) -> None:
    events = []
    for alert in alerts:
        old = alert.status
        alert.status, alert.resolved_at, alert.resolution = AlertStatus.RESOLVED, now, reasons[alert.key][:300]
        events.append(event(alert, AlertEventKind.RESOLVED, reasons[alert.key], old=old, now=now))
    Alert.objects.bulk_update(alerts, ["status", "resolved_at", "resolution"])
    AlertEvent.objects.bulk_create(events)


def escalate_alerts(alerts: list[Alert], reason: str, now) -> None:
    for alert in alerts:
        alert.escalated_at = now
    Alert.objects.bulk_update(alerts, ["escalated_at"])
    AlertEvent.objects.bulk_create([event(a, AlertEventKind.ESCALATED, reason, now=now) for a in alerts])


def advance_stage(alert: Alert, stage: int, kind: AlertEventKind, reason: str, now) -> AlertEvent:
    alert.stage = stage
    alert.save(update_fields=["stage"])
    return AlertEvent.objects.create(**_fields(event(alert, kind, reason, now=now)))


def _fields(evt: AlertEvent) -> dict:
    return {f.name: getattr(evt, f.name) for f in AlertEvent._meta.concrete_fields if f.name != "id"}


@transaction.atomic
def acknowledge(alert: Alert, user) -> AlertEvent:
    alert = Alert.objects.select_for_update().get(pk=alert.pk)
    if alert.status != AlertStatus.OPEN:
        raise AlertActionError(
            f"This alert is {alert.get_status_display().lower()}; only open alerts can be acknowledged."
        )
    now = timezone.now()
    alert.status, alert.acknowledged_at, alert.acknowledged_by = AlertStatus.ACKNOWLEDGED, now, user
    alert.save(update_fields=["status", "acknowledged_at", "acknowledged_by"])
    return AlertEvent.objects.create(
        **_fields(event(alert, AlertEventKind.ACKNOWLEDGED, f"Acknowledged by {user}.", AlertStatus.OPEN, user, now))
    )


MAX_SNOOZE = timedelta(days=7)


@transaction.atomic
def snooze(alert: Alert, user, duration: timedelta) -> AlertEvent:
    if not timedelta(minutes=1) <= duration <= MAX_SNOOZE:
        raise AlertActionError("Snooze for between 1 minute and 7 days.")
    alert = Alert.objects.select_for_update().get(pk=alert.pk)
    if not alert.is_open:
        raise AlertActionError("This alert is resolved; there is nothing to snooze.")
    now = timezone.now()
    alert.snoozed_until = now + duration
    alert.save(update_fields=["snoozed_until"])
    until = timezone.localtime(alert.snoozed_until).strftime("%d %b %H:%M")
    return AlertEvent.objects.create(
        **_fields(event(alert, AlertEventKind.SNOOZED, f"Snoozed by {user} until {until}.", actor=user, now=now))
    )
