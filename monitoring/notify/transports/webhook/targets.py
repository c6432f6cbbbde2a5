"""Where a webhook may point: the public internet, not the fleet's own network.

A webhook URL is chosen by any researcher, and the server POSTs to it: pointed at 127.0.0.1:6379 or at a
cloud's metadata address (169.254.169.254) it would let them reach what only the server can. So loopback,
link-local, private, multicast and every other non-global address is refused, when the webhook is saved
and again at each delivery on the address the connection actually uses (a name could resolve elsewhere by
then). An admin who runs an internal receiver lists its networks in WEBHOOK_ALLOWED_NETWORKS.
"""

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class RefusedTarget(Exception):
    """The target is an address webhooks may not reach; the message says which and why."""


def why_refused(address: Address) -> str | None:
    """The kind of address this is, when webhooks may not reach it; None for a public one (or an allowed one)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if any(address in network for network in allowed_networks()):
        return None
    for kind in ("loopback", "link_local", "private", "multicast", "unspecified", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    if not address.is_global:
        return "non-public"
    return None


def allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(network, strict=False) for network in settings.WEBHOOK_ALLOWED_NETWORKS]


def addresses(host: str, port: int) -> list[Address]:
    """Every address `host` stands for (it may be a literal address); socket.gaierror when it resolves to none."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]


def check_address(host: str, address: Address) -> None:
    reason = why_refused(address)
    if reason:
        shown = host if host == str(address) else f"{host} ({address})"
        raise RefusedTarget(
            f"{shown} is a {reason} address: webhooks only reach public addresses"
            " unless an admin allows its network (WEBHOOK_ALLOWED_NETWORKS)."
        )


def host_and_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return (parts.hostname or "", port)


def validate_public_url(url: str) -> None:
    """The model's validator: refuse a URL whose host is, or resolves to, an address webhooks may not reach.

    A name that does not resolve now is let through: the delivery checks whatever it resolves to then."""
    try:
        host, port = host_and_port(url)
    except ValueError:
        return  # the URL validator beside this one names the problem
    try:
        found = addresses(host, port)
    except (socket.gaierror, UnicodeError, ValueError):
        return
    for address in found:
        try:
            check_address(host, address)
        except RefusedTarget as refused:
            raise ValidationError(str(refused), code="refused_target") from None


def connect(host: str, port: int, timeout: float, source_address=None) -> socket.socket:
    """A connection to `host` on an address that passed the check; the check and the connection use the very
    same address, so a name that resolves differently the second time gains nothing."""
    try:
        found = addresses(host, port)
    except socket.gaierror as exc:
        raise OSError(f"{host} does not resolve: {exc}") from exc
    for address in found:
        check_address(host, address)
    error = None
    for address in found:
        try:
            return socket.create_connection((str(address), port), timeout, source_address)
        except OSError as exc:
            error = exc
    raise error or OSError(f"{host}: no address to connect to")
