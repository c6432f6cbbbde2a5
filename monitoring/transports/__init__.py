"""Notification transports: one module per kind, each a small class with `notify(alert)`.

A transport is built for one notification (who, which webhook, which event) and raises TransportError
when delivery fails; `permanent` says whether trying again could help.
"""

from django.utils.module_loading import import_string

from monitoring.transports.base import Transport, TransportError

__all__ = ["TRANSPORTS", "Transport", "TransportError", "transport_for"]

TRANSPORTS = {
    "inapp": "monitoring.transports.inapp.InAppTransport",
    "email": "monitoring.transports.email.EmailTransport",
    "webhook": "monitoring.transports.webhook.WebhookTransport",
}


def transport_for(notification) -> Transport:
    return import_string(TRANSPORTS[notification.transport])(notification)
