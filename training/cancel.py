"""Cancelling a run: a queued run ends at once; a started one is stopped by the node worker that owns it."""

from django.db import transaction
from django.utils import timezone

from training import broadcast
from training.choices import RunStatus
from training.models import Run
from training.serializers import state_payload


class CancelRefused(Exception):
    """The run cannot be cancelled (it has already ended)."""


def request_cancel(run: Run, user) -> Run:
    """Ask for the run to stop; the node worker sends SIGTERM, then SIGKILL after the grace period."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.is_finished:
            raise CancelRefused(f"The run has already ended ({run.get_status_display().lower()}).")
        if run.cancel_requested_at is None:
            Run.objects.filter(pk=run.pk).update(cancel_requested_at=timezone.now(), cancelled_by=user)
            run.refresh_from_db()
        if run.status in (RunStatus.SCHEDULED, RunStatus.QUEUED):
            # No node worker has it yet: nothing to stop. A worker that takes it later sees it ended.
            run.finish(RunStatus.CANCELLED, error=f"Cancelled by {user.get_username()} before it started.")
        broadcast.send_after_commit(run.pk, state_payload(run))
    return run
