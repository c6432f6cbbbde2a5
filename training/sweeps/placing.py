"""Placing a sweep's runs on free GPUs as they become free, and cancelling a sweep.

A sweep's run waits queued without GPUs. ``dispatch`` gives waiting runs GPUs of the sweep's pool that
are free for its owner (reservations/availability.py) and held by no unfinished run, at most ``gpu_count``
runs at a time, and sends them to their nodes. It runs after the sweep is stored and then from beat
every ``RUN_SWEEP_DISPATCH_S``, so a run starts soon after a GPU comes free.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from inventory.models import GPU
from reservations.availability import free_gpus
from reservations.gpu_picking import bookable_gpus
from training import broadcast
from training.cancel import CancelRefused, request_cancel
from training.choices import RunStatus
from training.dispatch.send import send_shares
from training.models import Run, RunNode, Sweep
from training.serializers import state_payload

log = logging.getLogger(__name__)

HOLDING = (RunStatus.QUEUED, RunStatus.STARTING, RunStatus.RUNNING)


def waiting_runs(sweep: Sweep):
    return sweep.runs.filter(status=RunStatus.QUEUED, nodes__isnull=True).order_by("pk")


def pool_of(sweep: Sweep) -> list[GPU]:
    named = list(sweep.pool.select_related("node", "model").order_by("node__hostname", "index"))
    if named or sweep.gpu_model is None:
        return named
    return list(bookable_gpus(sweep.gpu_model))


def dispatch_soon(sweep_id: int) -> None:
    transaction.on_commit(lambda: dispatch(sweep_id))


def dispatch(sweep_id: int) -> list[int]:
    """Give waiting runs of the sweep free GPUs, up to its count at once; the ids of the runs sent."""
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update(of=("self",)).select_related("owner").filter(pk=sweep_id).first()
        if sweep is None or sweep.cancelled_at or not sweep.gpu_count:
            return []
        waiting = list(waiting_runs(sweep))
        placed = sweep.runs.filter(status__in=HOLDING, nodes__isnull=False).distinct().count()
        room = min(len(waiting), sweep.gpu_count - placed)
        if room <= 0:
            return []
        held = set(Run.gpus.through.objects.filter(run__status__in=HOLDING).values_list("gpu_id", flat=True))
        candidates = [gpu for gpu in pool_of(sweep) if gpu.pk not in held]
        now = timezone.now()
        free = free_gpus(candidates, sweep.owner, now, now + timedelta(seconds=settings.RUN_BOOKING_HORIZON_S))
        sent = [place(run, gpu) for run, gpu in zip(waiting[:room], free, strict=False)]
    return sent


def place(run: Run, gpu: GPU) -> int:
    run.gpus.set([gpu])
    part = RunNode.objects.create(
        run=run, node=gpu.node, rank=0, gpu_indexes=[gpu.index], sent_at=timezone.now(), sends=1
    )
    broadcast.send_after_commit(run.pk, state_payload(run))
    transaction.on_commit(lambda: send_shares(run, [part]))
    log.info("sweep %s: run %s placed on %s", run.sweep_id, run.pk, gpu)
    return run.pk


def dispatch_all() -> list[int]:
    """Beat: every sweep with runs waiting for a GPU gets its chance."""
    sweeps = Sweep.objects.filter(
        cancelled_at__isnull=True, gpu_count__isnull=False, runs__status=RunStatus.QUEUED, runs__nodes__isnull=True
    ).distinct()
    return [run_id for sweep_id in sweeps.values_list("pk", flat=True) for run_id in dispatch(sweep_id)]


def cancel_sweep(sweep: Sweep, user) -> int:
    """Stop the sweep: no run is placed any more, and every unfinished run is cancelled. How many were."""
    with transaction.atomic():
        updated = Sweep.objects.filter(pk=sweep.pk, cancelled_at__isnull=True).update(
            cancelled_at=timezone.now(), cancelled_by=user
        )
    if not updated:
        raise CancelRefused("The sweep was already cancelled.")
    cancelled = 0
    for run in sweep.runs.filter(status__in=RunStatus.unfinished()).order_by("pk"):
        try:
            request_cancel(run, user)
            cancelled += 1
        except CancelRefused:
            pass
    return cancelled
