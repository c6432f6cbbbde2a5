"""An admin's "burn in": one `burnin` run per chosen GPU, through the ordinary launch path, all or nothing.

The GPU page, the node page, the Django admin's GPU and node lists and the API all come through
``burn_in``. Each GPU gets a run of its own (strategy ``single``), so one faulty GPU cannot void the
verdicts of its neighbours; the node worker runs them and each stores its GPU's health record
(monitoring/health/burnin_records.py). A GPU that is not free for the admin (reservations/availability.py: its node
is offline, someone else booked it or holds its memory) or already has a burn-in under way is refused
by name, and then nothing is queued.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from inventory.models import GPU
from reservations.availability import unfree
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run

WORKLOAD = "burnin"


class BurnInRefused(Exception):
    """Nothing was queued: the reasons, one sentence each; ``forbidden`` tells a permission refusal."""

    def __init__(self, reasons: list[str], forbidden: bool = False):
        super().__init__(" ".join(reasons))
        self.reasons = reasons
        self.forbidden = forbidden


def burn_in(user, gpus: Iterable[GPU]) -> list[Run]:
    """Queue a burn-in on each GPU (in node and index order) and return the runs; refuse them all or none."""
    if not user.is_staff:
        raise BurnInRefused(["Only an admin may burn in GPUs."], forbidden=True)
    gpus = sorted({gpu.pk: gpu for gpu in gpus}.values(), key=lambda gpu: (gpu.node.hostname, gpu.index))
    if not gpus:
        raise BurnInRefused(["Choose at least one GPU to burn in."])
    reasons = not_free(gpus, user) + under_way(gpus)
    if reasons:
        raise BurnInRefused(reasons)
    plans = []
    for gpu in gpus:
        plan, errors = check_launch(request_for(user, gpu))
        reasons += [f"{gpu}: {message}" for message in errors.values()]
        plans.append(plan)
    if reasons:
        raise BurnInRefused(reasons)
    with transaction.atomic():
        return [launch(plan) for plan in plans]


def request_for(user, gpu: GPU) -> LaunchRequest:
    # ``not_free`` has judged the GPUs (the offline node included, which the launch checks let wait).
    return LaunchRequest(
        user=user,
        workload=WORKLOAD,
        strategy="single",
        gpus=[gpu],
        processes=1,
        name=f"burn-in {gpu}",
        free_checked=True,
    )


def not_free(gpus: list[GPU], user) -> list[str]:
    """Why each GPU that is not free for ``user`` now is not (offline first, then bookings, then processes)."""
    start = timezone.now()
    taken = unfree(gpus, user, start, start + timedelta(seconds=settings.RUN_BOOKING_HORIZON_S))
    return [message for gpu in gpus if gpu.pk in taken for message in taken[gpu.pk].messages()]


def under_way(gpus: list[GPU]) -> list[str]:
    """A second burn-in on a GPU would only wait for the first: say which run is already there."""
    placed = Run.gpus.through.objects.filter(
        gpu__in=gpus, run__workload=WORKLOAD, run__status__in=RunStatus.unfinished()
    ).order_by("run_id")
    found = {}
    for gpu_id, run_id in placed.values_list("gpu_id", "run_id"):
        found.setdefault(gpu_id, run_id)
    return [f"{gpu} already has a burn-in under way (run #{found[gpu.pk]})." for gpu in gpus if gpu.pk in found]
