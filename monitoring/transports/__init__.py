"""Notification transports: one module per kind, each a small class with `notify(alert)`.

A transport is built for one notification (who, which webhook, which event) and raises TransportError
when delivery fails; `permanent` says whether trying again could help.
"""

from django.utils.module_loading import import_string

TRANSPORTS = {
    "inapp": "monitoring.transports.inapp.InAppTransport",
    "email": "monitoring.transports.email.EmailTransport",
    "webhook": "monitoring.transports.webhook.WebhookTransport",
}


class TransportError(Exception):
    """Delivery failed; `permanent` when retrying cannot help (e.g. the endpoint answered 404)."""

    def __init__(self, message: str, permanent: bool = False):
        super().__init__(message)
        self.message = message
        self.permanent = permanent


def transport_for(notification):
    return import_string(TRANSPORTS[notification.transport])(notification)
