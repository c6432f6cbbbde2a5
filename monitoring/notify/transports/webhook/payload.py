"""What a webhook posts: JSON with a Slack-compatible `text`, for one alert update or a digest."""

from monitoring.alerts.choices import AlertEventKind
from monitoring.alerts.models import Alert, AlertEvent
from monitoring.costs.api import UnderusedSerializer
from monitoring.notify import digests
from monitoring.notify.messages import alert_url, headline, others_of, url_of


def slack_escape(text: str) -> str:
    """Slack reads `<…>` as links and mentions (`<!channel>`) and `&` as the start of an entity; these three
    are escaped, as Slack asks, so a process name is shown as written and pings nobody."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_text(event: AlertEvent, others: list[Alert] = ()) -> str:
    detail = (event.reason or event.alert.message) if event.kind == AlertEventKind.OPENED else event.reason
    also = "".join(f"\n• <{url_of(o.pk)}|{slack_escape(o.title)}>" for o in others)
    title = slack_escape(headline(event, len(others)))
    return f"*{title}*\n{slack_escape(detail)}{also}\n<{alert_url(event)}|Open in GPU Fleet>"


def event_payload(event: AlertEvent, others: list[Alert] = ()) -> dict:
    """The webhook body: Slack-compatible `text` plus the alert as data (and the others of a grouped change)."""
    alert = event.alert
    return {
        "text": slack_text(event, others),
        "also": [{"id": o.pk, "title": o.title, "url": url_of(o.pk)} for o in others],
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


def digest_payload(digest: digests.Digest) -> dict:
    """The webhook body: a Slack-compatible `text`, each notification's usual body, the underused GPUs as data."""
    items = "".join(f"\n• <{alert_url(n.event)}|{slack_escape(digests.line(n))}>" for n in digest.notifications)
    if digest.underused:
        items += f"\n{slack_escape(digests.UNDERUSED_HEAD + digests.period(digest))}:"
        items += "".join(f"\n• {slack_escape(digests.underused_line(u))}" for u in digest.underused)
    return {
        "text": f"*{slack_escape(digest.subject)}*{items}",
        "digest": [event_payload(n.event, others_of(n)) for n in digest.notifications],
        "underused": UnderusedSerializer(digest.underused, many=True).data,
        "period": {
            "since": digest.since.isoformat() if digest.since else None,
            "until": digest.until.isoformat() if digest.until else None,
        },
    }
