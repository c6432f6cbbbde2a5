"""Alert state changes, each one stored as an AlertEvent row that the dispatcher later claims."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from monitoring.alerts.choices import AlertEventKind, AlertKind, AlertStatus
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
    """One alert per finding and its `opened` event; the caller knows none of the keys is open.

    A condition that comes back within ALERT_REOPEN_WITHIN_H reopens its last alert ("Idle again (3rd
    time today)") instead of starting a new one.
    """
    recent = reopenable([f.key for f in findings], now)
    reopened = [reopen(recent[f.key], f, now) for f in findings if f.key in recent]
    return reopened + create_alerts([f for f in findings if f.key not in recent], now)


def reopenable(keys: list[str], now) -> dict[str, Alert]:
    if not keys:
        return {}
    cutoff = now - timedelta(hours=settings.ALERT_REOPEN_WITHIN_H)
    resolved = Alert.objects.filter(key__in=keys, status=AlertStatus.RESOLVED, resolved_at__gte=cutoff)
    return {a.key: a for a in resolved.order_by("resolved_at")}  # the latest per key wins


ORDINALS = {1: "st", 2: "nd", 3: "rd"}


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else ORDINALS.get(n % 10, 'th')}"


def reopen(alert: Alert, f: Finding, now) -> Alert:
    cutoff = now - timedelta(hours=settings.ALERT_REOPEN_WITHIN_H)
    times = alert.events.filter(kind=AlertEventKind.OPENED, created__gte=cutoff).count() + 1
    again = "Idle again" if alert.kind == AlertKind.IDLE_PROCESS else "Again"
    window = f"{settings.ALERT_REOPEN_WITHIN_H:g} h"
    old = alert.status
    alert.status, alert.resolved_at, alert.resolution = AlertStatus.OPEN, None, ""
    alert.message, alert.details, alert.last_seen_at, alert.stage = f.message, f.details, now, 1
    alert.details["reopened"] = times
    alert.save(update_fields=["status", "resolved_at", "resolution", "message", "details", "last_seen_at", "stage"])
    reason = f"{again} ({ordinal(times)} time in {window}): {f.message}"
    AlertEvent.objects.create(**_fields(event(alert, AlertEventKind.OPENED, reason, old=old, now=now)))
    return alert


def create_alerts(findings: list[Finding], now) -> list[Alert]:
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
