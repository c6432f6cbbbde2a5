"""Picking free GPUs of a model for a window, packed onto as few nodes as possible."""

from collections import defaultdict
from datetime import datetime

from fleet.localtime import when
from inventory.choices import NodeStatus
from inventory.models import GPU, GPUModel, Node
from reservations.choices import ReservationStatus
from reservations.models import Reservation


class NotEnoughGPUs(Exception):
    """Fewer GPUs of the asked model are free than the booking needs."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def busy_gpu_ids(gpu_ids, start: datetime, end: datetime) -> set[int]:
    """GPUs among `gpu_ids` with an active booking overlapping [start, end)."""
    rows = Reservation.objects.filter(gpu_id__in=gpu_ids, status=ReservationStatus.ACTIVE, start__lt=end, end__gt=start)
    return set(rows.values_list("gpu_id", flat=True))


def bookable_gpus(model: GPUModel, node: Node | None = None):
    gpus = GPU.objects.filter(model=model).exclude(node__status=NodeStatus.DRAINING).select_related("node", "model")
    if node is not None:
        gpus = gpus.filter(node=node)
    return gpus.order_by("node__hostname", "index")


def pick_free_gpus(
    model: GPUModel, count: int, start: datetime, end: datetime, node: Node | None = None, same_node: bool = False
) -> list[GPU]:
    """`count` GPUs of `model` free over [start, end), or NotEnoughGPUs saying how many there are."""
    candidates = list(bookable_gpus(model, node))
    busy = busy_gpu_ids([g.id for g in candidates], start, end)
    free = [gpu for gpu in candidates if gpu.id not in busy]
    chosen = choose(free, count, same_node)
    if not chosen:
        raise NotEnoughGPUs(shortage_message(model, count, candidates, free, start, end, node, same_node))
    return chosen


def choose(free: list[GPU], count: int, same_node: bool) -> list[GPU]:
    """`count` of the free GPUs, packed onto as few nodes as possible; empty when they don't fit."""
    by_node = defaultdict(list)
    for gpu in free:
        by_node[gpu.node_id].append(gpu)
    if same_node:
        fitting = [group for group in by_node.values() if len(group) >= count]
        # Best fit: the node with the fewest free GPUs that still has enough keeps big blocks whole.
        return min(fitting, key=len)[:count] if fitting else []
    packed = [gpu for group in sorted(by_node.values(), key=len, reverse=True) for gpu in group]
    return packed[:count] if len(packed) >= count else []


def shortage_message(model, count, candidates, free, start, end, node, same_node) -> str:
    where = f" on {node.hostname}" if node else ""
    if len(candidates) < count:
        return f"The fleet has {len(candidates)} bookable {model.name} GPU(s){where}; you asked for {count}."
    per_node = defaultdict(int)
    for gpu in free:
        per_node[gpu.node_id] += 1
    most = max(per_node.values(), default=0)
    detail = f"at most {most} on one node" if same_node else f"only {len(free)}"
    return (
        f"{count} {model.name} GPU(s){where} are not free from {when(start)} to {when(end)} ({detail} are); "
        "the finder shows the soonest time they are."
    )
