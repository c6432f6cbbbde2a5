"""Webhooks: a JSON POST with a Slack-compatible `text`, signed with HMAC-SHA256 over the body.

Receivers verify `X-Fleet-Signature: sha256=<hex>` with their webhook's secret (docs/alerts.md).
5xx answers, timeouts and refused connections are retried; other 4xx answers are not.
"""

import hashlib
import hmac
import json
import urllib.error
import urllib.request

from django.conf import settings

from monitoring.notify.messages import payload
from monitoring.transports.base import Transport, TransportError

SIGNATURE_HEADER = "X-Fleet-Signature"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class WebhookTransport(Transport):
    def notify(self, alert) -> None:
        webhook = self.notification.webhook
        body = json.dumps(payload(self.event)).encode()
        request = urllib.request.Request(
            webhook.url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "User-Agent": "GPU-Fleet-Webhook/1",
                SIGNATURE_HEADER: sign(webhook.secret, body),
                "X-Fleet-Event": str(self.event.id),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=settings.WEBHOOK_TIMEOUT_S) as response:
                response.read(1024)
        except urllib.error.HTTPError as exc:
            retry = exc.code >= 500 or exc.code in (408, 429)
            raise TransportError(f"{webhook.url} answered {exc.code} {exc.reason}", permanent=not retry) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TransportError(f"{webhook.url} could not be reached: {reason}") from exc
