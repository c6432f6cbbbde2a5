"""A node reports only its own GPUs: a hello claiming another node's GPU is refused and shown to admins.

A GPU's UUID is visible to every researcher, so a node token must not be able to take a GPU (its history,
the runs placed on it) by naming its UUID. Moving a GPU between nodes is an admin's act: `manage.py
fleet_move_gpu UUID HOSTNAME` (or the GPU's admin page); both leave a security event.
"""

import logging

from django.db import transaction
from django.utils import timezone

from inventory.models import GPU, Node
from monitoring.ingest.choices import SecurityEventKind
from monitoring.ingest.models import SecurityEvent
from monitoring.ingest.validation import INDEX_MAX, FrameError

log = logging.getLogger("monitoring.security")

CLOSE_FOREIGN_GPU = 4403


class ForeignGPU(FrameError):
    """A hello that lists GPUs registered to another node; closes the connection with 4403."""

    close_code = CLOSE_FOREIGN_GPU

    def __init__(self, uuids: list[str]):
        listed = ", ".join(uuids[:5]) + (f" and {len(uuids) - 5} more" if len(uuids) > 5 else "")
        super().__init__(
            "foreign_gpu",
            f"gpus: {listed} {'is' if len(uuids) == 1 else 'are'} registered to another node; "
            "an admin moves a GPU between nodes (manage.py fleet_move_gpu UUID HOSTNAME)",
        )
        self.uuids = uuids


def refuse_foreign_gpus(node: Node, uuids: set[str]) -> None:
    """Raise ForeignGPU when any of uuids belongs to a GPU of another node."""
    foreign = sorted(GPU.objects.filter(uuid__in=uuids).exclude(node=node).values_list("uuid", flat=True))
    if foreign:
        raise ForeignGPU(foreign)


def record_foreign_gpus(node_id: int, uuids: list[str]) -> None:
    """The security event an admin sees (admin: Security events), one per claimed GPU, and a log line."""
    now = timezone.now()
    owners = dict(GPU.objects.filter(uuid__in=uuids).values_list("uuid", "node__hostname"))
    hostname = Node.objects.filter(pk=node_id).values_list("hostname", flat=True).first()
    for uuid in uuids:
        detail = f"the agent of {hostname} listed GPU {uuid} of {owners.get(uuid, 'another node')}; hello refused"
        log.warning("security: %s", detail)
        SecurityEvent.objects.create(
            node_id=node_id, kind=SecurityEventKind.FOREIGN_GPU, gpu_uuid=uuid, detail=detail, created=now
        )


class MoveError(Exception):
    pass


@transaction.atomic
def move_gpu(uuid: str, hostname: str, by: str = "") -> GPU:
    """Give the GPU to another node, at a free index (the node's next hello puts it at the index it reports)."""
    gpu = GPU.objects.select_for_update().select_related("node").filter(uuid=uuid).first()
    if gpu is None:
        raise MoveError(f"no GPU has UUID {uuid!r}")
    target = Node.objects.filter(hostname=hostname).first()
    if target is None:
        raise MoveError(f"no node is called {hostname!r}")
    if gpu.node_id == target.pk:
        return gpu
    used = set(GPU.objects.filter(node=target).values_list("index", flat=True))
    source = gpu.node.hostname
    gpu.node, gpu.index = target, next(i for i in range(INDEX_MAX, -1, -1) if i not in used)
    gpu.save(update_fields=["node", "index"])
    detail = f"GPU {uuid} moved from {source} to {hostname}" + (f" by {by}" if by else "")
    log.warning("security: %s", detail)
    SecurityEvent.objects.create(
        node=target, kind=SecurityEventKind.GPU_MOVED, gpu_uuid=uuid, detail=detail, created=timezone.now()
    )
    return gpu
