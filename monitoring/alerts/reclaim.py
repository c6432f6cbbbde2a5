"""On the node worker: end one idle process, but only if its pid still names the same process."""

import time

import psutil
from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from monitoring.alerts.choices import AlertEventKind, ReclaimStatus
from monitoring.alerts.models import AlertEvent, EndedProcess, Reclaim
from monitoring.notify.dispatch import dispatch_after_commit
from training.choices import RunStatus
from training.launching.cancel import CancelRefused, ask_to_stop
from training.models import Run

START_TIME_TOLERANCE_S = 2.0
# Beyond the run's grace period: the node worker notices the stop request within a flush or two.
RUN_STOP_MARGIN_S = 30.0
POLL_S = 0.1


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


def signal_process(reclaim: EndedProcess) -> tuple[str, str]:
    try:
        process = psutil.Process(reclaim.pid)
        mismatch = why_not_the_same(process, reclaim)
        if mismatch:
            return ReclaimStatus.MISMATCH, mismatch
        process.terminate()
        if wait_gone(process, reclaim.grace_s):
            return ReclaimStatus.TERMINATED, ""
        process.kill()
        if wait_gone(process, 10):
            return ReclaimStatus.KILLED, ""
        return ReclaimStatus.FAILED, f"pid {reclaim.pid} survived SIGKILL"
    except psutil.NoSuchProcess:
        return ReclaimStatus.GONE, f"No process with pid {reclaim.pid} was running."
    except psutil.AccessDenied:
        return ReclaimStatus.FAILED, f"The node worker may not signal pid {reclaim.pid} ({reclaim.os_user})."


def run_of(reclaim: Reclaim) -> Run | None:
    """The unfinished fleet run the idle process belongs to (the idle rule believed its claim), if any."""
    run_id = (reclaim.alert.details or {}).get("run_id")
    return unfinished_run(run_id) if isinstance(run_id, int) else None


def unfinished_run(run_id: int | None) -> Run | None:
    """The fleet run a process belongs to while that run is still going (a finished run's leftover is just a
    process); also for ending one process on request (monitoring/processes/stopping.py)."""
    if run_id is None:
        return None
    return Run.objects.filter(pk=run_id, status__in=RunStatus.unfinished()).first()


def stop_run(reclaim: Reclaim, run: Run) -> tuple[str, str]:
    """A run's process is ended the way a cancel ends it: the whole run is asked to stop (and checkpoints)."""
    reason = f"Stopped: its GPU sat idle and was reclaimed (alert #{reclaim.alert_id})."
    return end_with_run(reclaim, run, ask=lambda: ask_to_stop(run, None, reason))


def end_with_run(row: EndedProcess, run: Run, ask=None) -> tuple[str, str]:
    """End the process of ``row`` (a Reclaim or a ProcessStop) with its run: once the pid is proven the same
    process, ``ask`` asks the run to stop (None: it was asked already), then wait for the process to go."""
    try:
        process = psutil.Process(row.pid)
        mismatch = why_not_the_same(process, row)
    except psutil.NoSuchProcess:
        return ReclaimStatus.GONE, f"No process with pid {row.pid} was running."
    if mismatch:
        return ReclaimStatus.MISMATCH, mismatch
    if ask is not None:
        try:
            ask()
        except CancelRefused:
            pass  # it ended meanwhile
    if wait_gone(process, settings.RUN_CANCEL_GRACE_S + RUN_STOP_MARGIN_S):
        return ReclaimStatus.TERMINATED, ""
    return ReclaimStatus.FAILED, f"Run #{run.pk} was asked to stop, but pid {row.pid} is still running."


def why_not_the_same(process: psutil.Process, reclaim: EndedProcess) -> str:
    """Why this pid is not (provably) the process asked for any more; empty when it is."""
    if reclaim.process_started_at is None and not reclaim.cmdline:
        return "Neither a start time nor a command line was reported; the process cannot be identified."
    if reclaim.process_started_at is not None:
        drift = abs(process.create_time() - reclaim.process_started_at.timestamp())
        if drift > START_TIME_TOLERANCE_S:
            return f"pid {reclaim.pid} now belongs to a process started {drift:.0f} s apart from the one asked for."
    if reclaim.cmdline and " ".join(process.cmdline()).split() != reclaim.cmdline.split():
        return f"pid {reclaim.pid} now runs {' '.join(process.cmdline())!r}, not {reclaim.cmdline!r}."
    if reclaim.os_user and process.username() != reclaim.os_user:
        return f"pid {reclaim.pid} belongs to {process.username()}, not {reclaim.os_user}."
    return ""


def wait_gone(process: psutil.Process, timeout_s: float) -> bool:
    """True once the process has ended (a zombie waiting for its parent counts as ended)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(POLL_S)
    return False


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
        dispatch_after_commit(evt.pk)


TIME_LIMIT_S = max(settings.RECLAIM_GRACE_S, settings.RUN_CANCEL_GRACE_S + RUN_STOP_MARGIN_S) + 60


@shared_task(name="monitoring.tasks.reclaim_process", ignore_result=True, soft_time_limit=TIME_LIMIT_S)
def reclaim_process(reclaim_pk: int) -> str:
    """Runs on the node worker (queue node.<hostname>): end an idle process after checking it is the same one."""
    return end_process(reclaim_pk)
