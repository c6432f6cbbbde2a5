"""What "free" means, once, for every part that offers or accepts a GPU.

A GPU is free for a researcher over a window when its node is online, no one else's booking covers
any of the window, and no process of someone else holds more than ``FREE_GPU_FOREIGN_MEMORY_MIB`` of
its memory now. Find GPUs, the launch form and API, sweep placement and the Fleet page's "free only"
filter all ask here.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from fleet.localtime import when
from inventory.choices import NodeStatus
from inventory.models import GPU
from monitoring.storage import latest
from reservations.booking import conflicting_bookings
from training.owners import owner_key, owner_usernames


def holds_memory(process: Mapping) -> bool:
    """A process holds the GPU when it uses more than the threshold; an unknown amount counts as holding."""
    used = process.get("mem_used_mib")
    return used is None or used > settings.FREE_GPU_FOREIGN_MEMORY_MIB


def process_owner(process: Mapping, owners: Mapping[str, str]) -> str:
    """The researcher a process belongs to (processes/owners.py: its run's owner, else its OS user's researcher),
    or ``OS user <name>`` when nobody is known; ``owners`` is keyed by ``training.owners.owner_key``."""
    key = owner_key(process)
    user = process.get("user") if isinstance(process.get("user"), str) else ""
    return (owners.get(key) if key else None) or f"OS user {user or 'unknown'}"


def memory_holders(processes: Iterable[Mapping], owners: Mapping[str, str]) -> list[str]:
    """Who holds memory on a GPU now, by the processes of its latest sample; sorted, each once."""
    return sorted({process_owner(p, owners) for p in processes or [] if holds_memory(p)})


@dataclass
class Unfree:
    """Why a GPU is not free for someone: its node is offline, others booked it, others' processes hold it."""

    gpu: GPU
    offline: bool = False
    bookings: list = field(default_factory=list)
    in_use_by: list[str] = field(default_factory=list)

    def booking_messages(self) -> list[str]:
        return [
            f"{self.gpu} is booked by {row.user.get_username()} from {when(row.start)} to {when(row.end)}."
            for row in self.bookings
        ]

    def use_message(self) -> str:
        names = ", ".join(self.in_use_by)
        return f"{self.gpu} is in use by {names} (processes holding its memory now)." if names else ""

    def messages(self) -> list[str]:
        """Every reason, offline first."""
        offline = [f"{self.gpu} is on a node that is {self.gpu.node.status}."] if self.offline else []
        return [*offline, *self.booking_messages(), *filter(None, [self.use_message()])]


def in_use_by_others(gpus: Iterable[GPU], user) -> dict[int, list[str]]:
    """GPU id → the others whose processes hold memory on it now (GPUs nobody else holds are left out)."""
    gpus = list(gpus)
    processes = latest.processes(gpu.pk for gpu in gpus)
    owners = owner_usernames({key for found in processes.values() for p in found if (key := owner_key(p))})
    me = user.get_username() if user is not None else None
    found = {}
    for gpu in gpus:
        others = [name for name in memory_holders(processes.get(gpu.pk, []), owners) if name != me]
        if others:
            found[gpu.pk] = others
    return found


def unfree(gpus: Iterable[GPU], user, start: datetime, end: datetime, now: bool = True) -> dict[int, Unfree]:
    """GPU id → why it is not free for ``user`` over [start, end); free GPUs are left out.

    ``now`` says the window starts now, so the node's state and today's processes count; a later
    window is judged by the bookings alone.
    """
    gpus = list(gpus)
    found: dict[int, Unfree] = {}

    def entry(gpu: GPU) -> Unfree:
        return found.setdefault(gpu.pk, Unfree(gpu))

    by_id = {gpu.pk: gpu for gpu in gpus}
    for row in conflicting_bookings(list(by_id), user, start, end):
        entry(by_id[row.gpu_id]).bookings.append(row)
    if now:
        for gpu in gpus:
            if gpu.node.status != NodeStatus.ONLINE:
                entry(gpu).offline = True
        for gpu_id, names in in_use_by_others(gpus, user).items():
            entry(by_id[gpu_id]).in_use_by = names
    return found


def free_gpus(gpus: Iterable[GPU], user, start: datetime, end: datetime, now: bool = True) -> list[GPU]:
    """The GPUs among ``gpus`` free for ``user`` over [start, end), in the order given."""
    gpus = list(gpus)
    taken = unfree(gpus, user, start, end, now)
    return [gpu for gpu in gpus if gpu.pk not in taken]
