"""Notification transports: one folder per kind, found through TRANSPORTS.

A folder holds the transport's sender (a `Transport` subclass with `notify(alert)`, raising TransportError
when delivery fails; `permanent` says whether trying again could help) and whatever else is its own:
for a transport that delivers to destinations a person adds (a webhook), their model, form, API and
signing. Adding one is its folder and one line here: the notification choices (monitoring.notify.choices)
are built from it, and a destination model gets its field on Notification and UnderusedReported
(monitoring.notify.models), its section of the alert settings page and its API endpoint from here.
"""

from typing import NamedTuple

from django.utils.module_loading import import_string
from django.utils.text import slugify

from monitoring.notify.transports.base import Transport, TransportError

__all__ = [
    "TRANSPORTS",
    "Transport",
    "TransportError",
    "choices",
    "destination_kinds",
    "destination_model",
    "destination_slug",
    "transport_class",
    "transport_for",
]


class Registered(NamedTuple):
    """A transport kind: its constant in TransportKind, its label, its sender's dotted path, and the dotted
    path of the model of its destinations, if it has any."""

    constant: str
    label: str
    path: str
    destination: str = ""


TRANSPORTS: dict[str, Registered] = {
    "inapp": Registered("IN_APP", "In-app", "monitoring.notify.transports.inapp.sender.InAppTransport"),
    "email": Registered("EMAIL", "Email", "monitoring.notify.transports.email.sender.EmailTransport"),
    "webhook": Registered(
        "WEBHOOK",
        "Webhook",
        "monitoring.notify.transports.webhook.sender.WebhookTransport",
        destination="monitoring.notify.transports.webhook.models.Webhook",
    ),
}


def choices() -> list[tuple[str, str]]:
    """(kind, label) pairs for the Notification.transport field."""
    return [(kind, registered.label) for kind, registered in TRANSPORTS.items()]


def transport_class(kind: str) -> type[Transport]:
    return import_string(TRANSPORTS[kind].path)


def transport_classes() -> list[tuple[str, type[Transport]]]:
    return [(kind, transport_class(kind)) for kind in TRANSPORTS]


def transport_for(notification) -> Transport:
    return transport_class(notification.transport)(notification)


def destination_kinds() -> list[str]:
    """The kinds with destinations; each names its destination's field on a notification."""
    return [kind for kind, registered in TRANSPORTS.items() if registered.destination]


def destination_model(kind: str):
    """The model of this kind's destinations (importing it registers it with the monitoring app), or None."""
    path = TRANSPORTS[kind].destination
    return import_string(path) if path else None


def destination_slug(kind: str) -> str:
    """Its destinations' plural as a URL segment: `webhooks` in /alerts/webhooks/ and /api/webhooks/."""
    return slugify(destination_model(kind)._meta.verbose_name_plural)


def destination_kwargs(kind: str, destination=None) -> dict:
    """The destination fields of a notification of this kind: its own set to `destination`, the others empty."""
    return {field: destination if field == kind else None for field in destination_kinds()}


def destination_id_kwargs(kind: str, destination_id: int | None) -> dict:
    """Like destination_kwargs, by id (for filters and rows built from ids)."""
    return {f"{field}_id": destination_id if field == kind else None for field in destination_kinds()}


def destination_id_of(row) -> int | None:
    """The id of the destination a notification (or a digest mark) went to; None for a kind without one."""
    return getattr(row, f"{row.transport}_id") if row.transport in destination_kinds() else None
