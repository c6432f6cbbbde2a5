"""The words of a notification, shared by every transport (a webhook's JSON is in its folder, payload.py)."""

from django.conf import settings
from django.urls import reverse

from fleet.localtime import when
from monitoring.alerts.choices import AlertEventKind, AlertStatus
from monitoring.alerts.models import Alert, AlertEvent

HEADLINES = {
    AlertEventKind.OPENED: "{title}",
    AlertEventKind.WARNED: "Warning: {title}",
    AlertEventKind.ESCALATED: "Escalated: {title}",
    AlertEventKind.RECLAIMED: "Reclaimed: {title}",
    AlertEventKind.RECLAIM_FAILED: "Reclaim failed: {title}",
    AlertEventKind.RESOLVED: "Resolved: {title}",
}


def url_of(alert_id: int) -> str:
    return settings.SITE_URL.rstrip("/") + reverse("monitoring:alert", args=[alert_id])


def alert_url(event: AlertEvent) -> str:
    return url_of(event.alert_id)


def others_of(notification) -> list[Alert]:
    """The other alerts a grouped notification stands for (the same run or node, changed at once)."""
    return list(Alert.objects.filter(pk__in=notification.also).order_by("pk")) if notification.also else []


def headline(event: AlertEvent, more: int = 0) -> str:
    template = HEADLINES.get(AlertEventKind(event.kind), "{title}")
    if event.kind == AlertEventKind.OPENED and event.old_status == AlertStatus.RESOLVED:
        template = event.reason.split(": ", 1)[0] + ": {title}"  # "Idle again (3rd time in 24 h): …"
    text = template.format(title=event.alert.title)
    return f"{text} and {more} more" if more else text


def body(event: AlertEvent, others: list[Alert] = ()) -> str:
    """Plain text: what happened, why, and where to look."""
    alert = event.alert
    lines = [headline(event, len(others)), ""]
    if event.kind == AlertEventKind.OPENED:
        lines.append(event.reason or alert.message)  # a reopened alert's reason says "Idle again (2nd time …)"
    else:
        lines += [event.reason, "", alert.message]
    if others:
        lines += ["", "Also:"] + [f"- {other.title}: {url_of(other.pk)}" for other in others]
    lines += [
        "",
        f"When: {when(event.created)}",
        f"Severity: {alert.get_severity_display()}",
        f"Details: {alert_url(event)}",
    ]
    return "\n".join(line for line in lines).strip() + "\n"
