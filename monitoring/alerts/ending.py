"""Ending one GPU process on its node, but only while its pid still names the same process.

Shared by idle reclaim (monitoring/alerts/rules/idle/reclaim.py) and the process table's End
(monitoring/processes/stopping.py); both record the outcome on an `EndedProcess` row.
"""

import time

import psutil
from django.conf import settings

from monitoring.alerts.choices import ReclaimStatus
from monitoring.alerts.models import EndedProcess
from training.cancel import CancelRefused
from training.choices import RunStatus
from training.models import Run

START_TIME_TOLERANCE_S = 2.0
# Beyond the run's grace period: the node worker notices the stop request within a flush or two.
RUN_STOP_MARGIN_S = 30.0
POLL_S = 0.1


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


def unfinished_run(run_id: int | None) -> Run | None:
    """The fleet run a process belongs to while that run is still going (a finished run's leftover is just a
    process); also for ending one process on request (monitoring/processes/stopping.py)."""
    if run_id is None:
        return None
    return Run.objects.filter(pk=run_id, status__in=RunStatus.unfinished()).first()


def end_with_run(row: EndedProcess, run: Run, ask=None) -> tuple[str, str]:
    """End the process of ``row`` (a Reclaim or a ProcessStop) with its run: once the pid is proven the same
    process, ``ask`` asks the run to stop (None: it was asked already), then wait for the process to go."""
    try:
        process = psutil.Process(row.pid)
        mismatch = why_not_the_same(process, row)
    except psutil.NoSuchProcess:
        if ask is None:
            # The run was asked to stop with the request and its processes went before this task arrived:
            # ended as asked, not a pid that was never there.
            return ReclaimStatus.TERMINATED, ""
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
