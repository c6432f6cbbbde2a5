"""Find the soonest window in which k GPUs of a model are free for h hours."""

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from inventory.models import GPU, GPUModel, Node
from reservations.availability import unfree
from reservations.choices import ReservationStatus
from reservations.gpu_picking import bookable_gpus, choose
from reservations.models import Reservation

HORIZON = timedelta(days=28)


@dataclass
class Slot:
    """A window and the GPUs free for all of it."""

    start: datetime
    end: datetime
    gpus: list[GPU]

    @property
    def nodes(self) -> list[str]:
        return sorted({gpu.node.hostname for gpu in self.gpus})


class Busy:
    """One GPU's booked intervals, sorted; they never overlap (PostgreSQL sees to that)."""

    def __init__(self, intervals: list[tuple[datetime, datetime]]):
        self.starts = [s for s, _ in intervals]
        self.ends = [e for _, e in intervals]

    def free(self, start: datetime, end: datetime) -> bool:
        i = bisect_right(self.ends, start)  # the first interval that ends after `start`
        return i == len(self.starts) or self.starts[i] >= end


def find_slots(
    model: GPUModel,
    count: int,
    hours: float,
    now: datetime,
    node: Node | None = None,
    same_node: bool = False,
    limit: int = 3,
    user=None,
) -> list[Slot]:
    """The soonest `limit` start times (each a free window of `hours`) for `count` GPUs of `model`.

    A window starting now also leaves out GPUs that are not free now (reservations/availability.py): an
    offline node, or someone else's process holding the memory.
    """
    gpus = list(bookable_gpus(model, node))
    if len(gpus) < count:
        return []
    busy = busy_by_gpu(gpus, now, now + HORIZON)
    length = timedelta(hours=hours)
    starts = candidate_starts(now, busy)
    taken_now = unfree(gpus, user, starts[0], starts[0] + length)
    slots = []
    for start in starts:
        free = [gpu for gpu in gpus if busy[gpu.id].free(start, start + length)]
        if start == starts[0]:
            free = [gpu for gpu in free if gpu.id not in taken_now]
        chosen = choose(free, count, same_node)
        if chosen:
            slots.append(Slot(start, start + length, chosen))
            if len(slots) == limit:
                break
    return slots


def busy_by_gpu(gpus: list[GPU], start: datetime, end: datetime) -> dict[int, Busy]:
    rows = Reservation.objects.filter(
        gpu_id__in=[g.id for g in gpus], status=ReservationStatus.ACTIVE, end__gt=start, start__lt=end
    ).order_by("start")
    intervals = defaultdict(list)
    for gpu_id, s, e in rows.values_list("gpu_id", "start", "end"):
        intervals[gpu_id].append((s, e))
    return {gpu.id: Busy(intervals[gpu.id]) for gpu in gpus}


def candidate_starts(now: datetime, busy: dict[int, Busy]) -> list[datetime]:
    # The soonest window starts now or the moment some booking ends; no other moment can be sooner.
    start = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
    ends = {e for b in busy.values() for e in b.ends if e > start}
    return [start, *sorted(ends)]
