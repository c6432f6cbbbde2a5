"""The words of a notification, shared by every transport."""

from django.conf import settings
from django.urls import reverse

from fleet.localtime import when
from monitoring.alerts.choices import AlertEventKind
from monitoring.alerts.models import AlertEvent

HEADLINES = {
    AlertEventKind.OPENED: "{title}",
    AlertEventKind.WARNED: "Warning: {title}",
    AlertEventKind.ESCALATED: "Escalated: {title}",
    AlertEventKind.RECLAIMED: "Reclaimed: {title}",
    AlertEventKind.RECLAIM_FAILED: "Reclaim failed: {title}",
    AlertEventKind.RESOLVED: "Resolved: {title}",
}


def alert_url(event: AlertEvent) -> str:
    return settings.SITE_URL.rstrip("/") + reverse("monitoring:alert", args=[event.alert_id])


def headline(event: AlertEvent) -> str:
    template = HEADLINES.get(AlertEventKind(event.kind), "{title}")
    return template.format(title=event.alert.title)


def body(event: AlertEvent) -> str:
    """Plain text: what happened, why, and where to look."""
    alert = event.alert
    lines = [headline(event), ""]
    if event.kind == AlertEventKind.OPENED:
        lines.append(event.reason or alert.message)  # a reopened alert's reason says "Idle again (2nd time …)"
    else:
        lines += [event.reason, "", alert.message]
    lines += [
        "",
        f"When: {when(event.created)}",
        f"Severity: {alert.get_severity_display()}",
        f"Details: {alert_url(event)}",
    ]
    return "\n".join(line for line in lines).strip() + "\n"


def slack_escape(text: str) -> str:
    """Slack reads `<…>` as links and mentions (`<!channel>`) and `&` as the start of an entity; these three
    are escaped, as Slack asks, so a process name is shown as written and pings nobody."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_text(event: AlertEvent) -> str:
    detail = (event.reason or event.alert.message) if event.kind == AlertEventKind.OPENED else event.reason
    return f"*{slack_escape(headline(event))}*\n{slack_escape(detail)}\n<{alert_url(event)}|Open in GPU Fleet>"


def payload(event: AlertEvent) -> dict:
    """The webhook body: Slack-compatible `text` plus the alert as data."""
    alert = event.alert
    return {
        "text": slack_text(event),
        "event": {"id": event.id, "kind": event.kind, "reason": event.reason, "created": event.created.isoformat()},
        "alert": {
            "id": alert.id,
            "kind": alert.kind,
            "severity": alert.severity,
            "status": alert.status,
            "title": alert.title,
            "message": alert.message,
            "owner": alert.owner.get_username() if alert.owner else None,
            "project": alert.project.name if alert.project else None,
            "node": alert.details.get("node"),
            "gpu": alert.details.get("gpu"),
            "opened_at": alert.opened_at.isoformat(),
            "resolved_at": alert.resolved_at.isoformat() if alert.resolved_at else None,
            "url": alert_url(event),
        },
    }
