"""Webhooks: a JSON POST with a Slack-compatible `text`, signed the Standard Webhooks way (signing.py),
sent only to addresses targets.py allows.

5xx answers, timeouts and refused connections are retried; other 4xx answers, redirects and a refused
target are not.
"""

import json
import time
import urllib.error
import urllib.request

from django.conf import settings

from monitoring.notify import digests
from monitoring.notify.messages import others_of
from monitoring.notify.transports.base import Transport, TransportError
from monitoring.notify.transports.webhook import signing
from monitoring.notify.transports.webhook.admin import WebhookAdmin
from monitoring.notify.transports.webhook.api import WebhookViewSet
from monitoring.notify.transports.webhook.forms import WebhookForm
from monitoring.notify.transports.webhook.http import OPENER
from monitoring.notify.transports.webhook.payload import digest_payload, event_payload
from monitoring.notify.transports.webhook.targets import RefusedTarget


class WebhookTransport(Transport):
    delivery_field = "webhook_delivery"
    form = WebhookForm
    viewset = WebhookViewSet
    admin = WebhookAdmin

    @classmethod
    def reaches(cls, prefs) -> list:
        return list(prefs.user.webhooks.filter(active=True)) if prefs.webhooks else []

    def notify(self, alert) -> None:
        self.post(event_payload(self.event, others_of(self.notification)), f"msg_{self.notification.pk}")

    def notify_digest(self, digest: digests.Digest) -> None:
        self.post(digest_payload(digest), f"msg_{digest.message_id}")

    def post(self, data: dict, message_id: str) -> None:
        webhook = self.notification.webhook
        body = json.dumps(data).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GPU-Fleet-Webhook/2",
        }
        if self.event is not None:  # a digest of underused GPUs alone tells of no alert event
            headers["X-Fleet-Event"] = str(self.event.id)
        headers |= signing.headers(webhook.secret, message_id, int(time.time()), body)
        request = urllib.request.Request(webhook.url, data=body, method="POST", headers=headers)
        try:
            with OPENER.open(request, timeout=settings.WEBHOOK_TIMEOUT_S) as response:
                response.read(1024)
        except RefusedTarget as exc:
            raise TransportError(str(exc), permanent=True) from exc
        except urllib.error.HTTPError as exc:
            retry = exc.code >= 500 or exc.code in (408, 429)
            raise TransportError(f"{webhook.url} answered {exc.code} {exc.reason}", permanent=not retry) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TransportError(f"{webhook.url} could not be reached: {reason}") from exc
