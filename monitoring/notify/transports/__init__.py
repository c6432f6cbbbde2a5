"""Notification transports: one module per kind, each a small class with `notify(alert)`, found through TRANSPORTS.

A transport is built for one notification (who, which webhook, which event) and raises TransportError
when delivery fails; `permanent` says whether trying again could help. Adding one is a module here
and one line in TRANSPORTS: the notification choices (monitoring.notify.choices) are built from it.
"""

from typing import NamedTuple

from django.utils.module_loading import import_string

from monitoring.notify.transports.base import Transport, TransportError

__all__ = ["TRANSPORTS", "Transport", "TransportError", "choices", "transport_for"]


class Registered(NamedTuple):
    """A transport kind: its constant in TransportKind, its label, and its class's dotted path."""

    constant: str
    label: str
    path: str


TRANSPORTS: dict[str, Registered] = {
    "inapp": Registered("IN_APP", "In-app", "monitoring.notify.transports.inapp.InAppTransport"),
    "email": Registered("EMAIL", "Email", "monitoring.notify.transports.email.EmailTransport"),
    "webhook": Registered("WEBHOOK", "Webhook", "monitoring.notify.transports.webhook.WebhookTransport"),
}


def choices() -> list[tuple[str, str]]:
    """(kind, label) pairs for the Notification.transport field."""
    return [(kind, registered.label) for kind, registered in TRANSPORTS.items()]


def transport_for(notification) -> Transport:
    return import_string(TRANSPORTS[notification.transport].path)(notification)
