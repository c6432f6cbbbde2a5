"""A hello registers what the agent found: the node's versions and boot, its GPUs by UUID, and where to resume."""

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from inventory.choices import NodeStatus
from inventory.gpu_models import model_for_nvml_name
from inventory.models import GPU, Node
from monitoring.ingest.models import AgentSession, NodeStatusChange
from monitoring.ingest.ownership import refuse_foreign_gpus
from monitoring.ingest.validation import INDEX_MAX, FrameError, GPUInfo, Hello
from monitoring.ingest.writer import GPURef
from monitoring.storage import latest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Welcome:
    """What the connection needs after its hello: the GPUs by UUID, the seq to resume after, a status flip."""

    gpus: dict[str, GPURef]
    resume_seq: int
    came_online: bool


@transaction.atomic
def accept_hello(node_id: int, hello: Hello, connection: str = "", now: datetime | None = None) -> Welcome:
    # The time is taken here, not by the caller: under load a hello may wait for the ORM thread.
    now = now or timezone.now()
    node = Node.objects.select_for_update().get(pk=node_id)
    if hello.hostname != node.hostname:
        raise FrameError(
            "wrong_node", f"this token belongs to node {node.hostname!r}, but the hello says {hello.hostname!r}"
        )
    refuse_foreign_gpus(node, {info.uuid for info in hello.gpus})
    came_online = mark_connected(node, hello, now)
    gpus = upsert_gpus(node, hello.gpus)
    latest.ensure(gpu.pk for gpu in gpus)  # the flushes update these rows; a GPU made before them had none
    resume_seq = resume_after(node, hello, connection, now)
    refs = {gpu.uuid: GPURef(gpu.pk, gpu.uuid, gpu.index, node.hostname, gpu.memory_total_mib) for gpu in gpus}
    return Welcome(refs, resume_seq, came_online)


def mark_connected(node: Node, hello: Hello, now: datetime) -> bool:
    """Record the versions and boot; an offline node comes online (a draining one stays draining)."""
    node.driver_version = hello.driver_version
    node.cuda_version = hello.cuda_version
    node.agent_version = hello.agent_version
    node.boot_id = hello.boot_id
    node.last_seen = now
    came_online = node.status == NodeStatus.OFFLINE
    if came_online:
        NodeStatusChange.objects.create(
            node=node, old_status=node.status, new_status=NodeStatus.ONLINE, reason="agent connected", created=now
        )
        node.status = NodeStatus.ONLINE
    node.save(update_fields=["driver_version", "cuda_version", "agent_version", "boot_id", "last_seen", "status"])
    return came_online


def resume_after(node: Node, hello: Hello, connection: str, now: datetime) -> int:
    """The seq up to which this agent start's frames are all settled; a new start (session or boot) begins at 0."""
    session, created = AgentSession.objects.select_for_update().get_or_create(
        node=node, defaults={"session": hello.session, "boot_id": hello.boot_id, "connected_at": now}
    )
    if not created and (session.session, session.boot_id) != (hello.session, hello.boot_id):
        session.session, session.boot_id, session.last_seq, session.ahead = hello.session, hello.boot_id, 0, []
    session.connected_at, session.connection = now, connection
    session.save()
    return session.last_seq


def upsert_gpus(node: Node, announced: list[GPUInfo]) -> list[GPU]:
    """Each announced GPU by UUID; a row of this node at that index with an unannounced UUID is updated in place.

    Every announced UUID is new or this node's own (refuse_foreign_gpus ran first).
    """
    uuids = {info.uuid for info in announced}
    by_uuid = {gpu.uuid: gpu for gpu in GPU.objects.select_for_update().filter(uuid__in=uuids)}
    on_node = {gpu.index: gpu for gpu in GPU.objects.select_for_update().filter(node=node)}
    rows = {info.uuid: by_uuid.get(info.uuid) or reusable(on_node.get(info.index), uuids) for info in announced}
    park_movers(node, announced, rows, on_node)
    models: dict[str, object] = {}
    return [save_gpu(node, info, rows[info.uuid], models) for info in announced]


def reusable(gpu: GPU | None, announced_uuids: set[str]) -> GPU | None:
    return gpu if gpu is not None and gpu.uuid not in announced_uuids else None


def park_movers(node: Node, announced: list[GPUInfo], rows: dict[str, GPU | None], on_node: dict[int, GPU]) -> None:
    """Move rows out of the indexes they are about to lose, so no two rows of the node ever share an index."""
    target = {row.pk: info.index for info in announced if (row := rows[info.uuid]) is not None}
    claimed = {info.index for info in announced}
    movers = [
        row
        for row in on_node.values()
        if (row.pk in target and target[row.pk] != row.index) or (row.pk not in target and row.index in claimed)
    ]
    used = set(on_node) | claimed
    free = (index for index in range(INDEX_MAX, -1, -1) if index not in used)
    for row in movers:
        row.index = next(free)
        row.save(update_fields=["index"])
        if row.pk not in target:
            log.warning("GPU %s of %s is no longer announced; moved to index %d", row.uuid, node, row.index)


def save_gpu(node: Node, info: GPUInfo, gpu: GPU | None, models: dict) -> GPU:
    if info.name not in models:
        models[info.name] = model_for_nvml_name(info.name)
    gpu = gpu or GPU(node=node)
    # An unknown name keeps the model an admin chose for it; a new name that matches nothing clears it.
    gpu.model = models[info.name] or (gpu.model if gpu.name == info.name else None)
    gpu.node, gpu.index, gpu.uuid, gpu.name, gpu.mig = node, info.index, info.uuid, info.name, info.mig
    gpu.memory_total_mib, gpu.power_limit_w = info.memory_total_mib, info.power_limit_w
    gpu.pcie_gen, gpu.pcie_width, gpu.pci_bus_id = info.pcie_gen, info.pcie_width, info.pci_bus_id
    gpu.save()
    return gpu
