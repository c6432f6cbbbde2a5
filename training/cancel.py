"""Stopping a run politely: cancel, an admin's preempt of its booking and idle reclaim all come through here.

``ask_to_stop`` records the request on the run; a queued run ends at once, a started one is stopped by
the node worker that owns it: SIGTERM to its processes (built-in workloads save a checkpoint and leave),
then SIGKILL after RUN_CANCEL_GRACE_S (training/node/worker.py, ``ProcessGroup.stop``).
"""

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from training import broadcast
from training.choices import RunStatus
from training.models import Run
from training.serializers import state_payload


class CancelRefused(Exception):
    """The run cannot be cancelled (it has already ended)."""


def request_cancel(run: Run, user) -> Run:
    """A researcher or an admin cancels the run."""
    return ask_to_stop(run, user, f"Cancelled by {user.get_username()}.")


def ask_to_stop(run: Run, by, reason: str) -> Run:
    """Ask the run to stop (SIGTERM, then SIGKILL after the grace period); ``reason`` becomes its end message.

    ``by`` is the user who asked, or None for the fleet itself (idle reclaim). The first request's reason wins.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.is_finished:
            raise CancelRefused(f"The run has already ended ({run.get_status_display().lower()}).")
        if run.cancel_requested_at is None:
            Run.objects.filter(pk=run.pk).update(
                cancel_requested_at=timezone.now(), cancelled_by=by, stop_reason=reason[:300]
            )
            run.refresh_from_db()
        if run.status in (RunStatus.SCHEDULED, RunStatus.QUEUED):
            # No node worker has it yet: nothing to stop. A worker that takes it later sees it ended.
            run.finish(RunStatus.CANCELLED, error=f"{run.stop_reason.rstrip('.')} before it started.")
        broadcast.send_after_commit(run.pk, state_payload(run))
    return run


def stop_runs_on_booking(rows, reason: str) -> list[int]:
    """Politely stop the unfinished runs a booking's holder has on its GPUs (or that wait for it); their ids."""
    stopped = []
    for row in rows:
        runs = Run.objects.filter(status__in=RunStatus.unfinished(), owner_id=row.user_id)
        for run in runs.filter(Q(reservation=row) | Q(gpus=row.gpu)).distinct():
            try:
                ask_to_stop(run, None, reason)
            except CancelRefused:
                continue
            stopped.append(run.pk)
    return stopped
