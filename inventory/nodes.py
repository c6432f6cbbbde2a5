"""Registering nodes and issuing their agent tokens."""

from django.db import transaction
from django.utils import timezone

from inventory.models import Node
from inventory.node_tokens import hash_token, new_token


class NodeError(Exception):
    pass


def add_node(hostname: str) -> tuple[Node, str]:
    """Create a node and return it with its token, which is never stored in clear."""
    hostname = hostname.strip()
    if not hostname:
        raise NodeError("a hostname is required")
    token = new_token()
    with transaction.atomic():
        if Node.objects.filter(hostname=hostname).exists():
            raise NodeError(f"node {hostname!r} already exists; use fleet_rotate_token {hostname} for a new token")
        node = Node.objects.create(hostname=hostname, token_hash=hash_token(token), token_created=timezone.now())
    return node, token


def rotate_token(hostname: str) -> str:
    """A new token for the node; the old one stops working at once."""
    token = new_token()
    updated = Node.objects.filter(hostname=hostname).update(token_hash=hash_token(token), token_created=timezone.now())
    if not updated:
        raise NodeError(f"no node named {hostname!r}; add it with fleet_add_node {hostname}")
    return token


def give_token(node: Node) -> str:
    """Set a new token on a node not saved yet (the admin's add form); returns it, to be shown once."""
    token = new_token()
    node.token_hash, node.token_created = hash_token(token), timezone.now()
    return token


def agent_install_lines(token: str, server: str) -> list[str]:
    """What to run as root on the node to start its agent with this token (docs/install.md, GPU nodes)."""
    return [
        f"(umask 077; echo '{token}' > /etc/gpu-fleet/agent.token)",
        f"echo 'FLEET_AGENT_SERVER={server}' > /etc/gpu-fleet/agent.env",
        "systemctl enable --now gpu-fleet-agent",
    ]


def node_for_token(token: str) -> Node | None:
    if not token:
        return None
    return Node.objects.filter(token_hash=hash_token(token)).first()
