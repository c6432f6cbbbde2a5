"""On the node worker: end one idle process of a reclaim, but only if its pid still names the same process."""

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from monitoring.alerts import outbox
from monitoring.alerts.choices import AlertEventKind, ReclaimStatus
from monitoring.alerts.ending import RUN_STOP_MARGIN_S, end_with_run, signal_process, unfinished_run
from monitoring.alerts.models import AlertEvent, Reclaim
from training.cancel import ask_to_stop
from training.models import Run


def end_process(reclaim_pk: int) -> str:
    """Signal the process of one reclaim (SIGTERM, then SIGKILL after its grace period); record how it went."""
    if not Reclaim.objects.filter(pk=reclaim_pk, status=ReclaimStatus.REQUESTED, signalled_at=None).update(
        signalled_at=timezone.now()
    ):
        return "claimed elsewhere"
    reclaim = Reclaim.objects.select_related("alert").get(pk=reclaim_pk)
    try:
        run = run_of(reclaim)
        status, error = stop_run(reclaim, run) if run is not None else signal_process(reclaim)
    except Exception as exc:  # whatever happens, the reclaim row says how it ended
        status, error = ReclaimStatus.FAILED, f"{type(exc).__name__}: {exc}"
    record(reclaim, status, error)
    return status


def run_of(reclaim: Reclaim) -> Run | None:
    """The unfinished fleet run the idle process belongs to (the idle rule believed its claim), if any."""
    run_id = (reclaim.alert.details or {}).get("run_id")
    return unfinished_run(run_id) if isinstance(run_id, int) else None


def stop_run(reclaim: Reclaim, run: Run) -> tuple[str, str]:
    """A run's process is ended the way a cancel ends it: the whole run is asked to stop (and checkpoints)."""
    reason = f"Stopped: its GPU sat idle and was reclaimed (alert #{reclaim.alert_id})."
    return end_with_run(reclaim, run, ask=lambda: ask_to_stop(run, None, reason))


def record(reclaim: Reclaim, status: str, error: str) -> None:
    ended = status in (ReclaimStatus.TERMINATED, ReclaimStatus.KILLED)
    with transaction.atomic():
        reclaim.status, reclaim.error, reclaim.finished_at = status, error, timezone.now()
        reclaim.save(update_fields=["status", "error", "finished_at"])
        how = "SIGTERM" if status == ReclaimStatus.TERMINATED else "SIGKILL"
        what = f"pid {reclaim.pid} ({reclaim.cmdline or 'no command line'}) of {reclaim.os_user or 'an unknown user'}"
        reason = f"{what} ended by {how}." if ended else f"{what} was not ended: {error}"
        evt = AlertEvent.objects.create(
            alert=reclaim.alert,
            kind=AlertEventKind.RECLAIMED if ended else AlertEventKind.RECLAIM_FAILED,
            old_status=reclaim.alert.status,
            new_status=reclaim.alert.status,
            reason=reason,
        )
        outbox.announce(evt.pk)  # told by the notifier after commit, like an evaluation's events


TIME_LIMIT_S = max(settings.RECLAIM_GRACE_S, settings.RUN_CANCEL_GRACE_S + RUN_STOP_MARGIN_S) + 60


@shared_task(name="monitoring.tasks.reclaim_process", ignore_result=True, soft_time_limit=TIME_LIMIT_S)
def reclaim_process(reclaim_pk: int) -> str:
    """Runs on the node worker (queue node.<hostname>): end an idle process after checking it is the same one."""
    return end_process(reclaim_pk)
