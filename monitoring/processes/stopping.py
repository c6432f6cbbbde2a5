"""Ending one GPU process on request: checked here, carried out by the node worker like a run's cancel.

The owner is whoever fleet/owners.py says owns the process; a researcher may end their own processes, an
admin any. The node worker checks the pid still names the same process (start time, command line, OS
user) before it sends SIGTERM, then SIGKILL after RUN_CANCEL_GRACE_S, the grace a cancelled run gets.
"""

from datetime import UTC, datetime

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fleet.celery import node_queue
from fleet.models import GPU
from fleet.owners import ProcessOwners
from monitoring.alerts.choices import ReclaimStatus
from monitoring.alerts.reclaim import signal_process
from monitoring.processes.models import ProcessStop


class StopRefused(Exception):
    """The process cannot be ended by this user; `forbidden` tells a permission refusal from a missing one."""

    def __init__(self, message: str, forbidden: bool = False):
        super().__init__(message)
        self.forbidden = forbidden


def reported_process(gpu: GPU, pid: int) -> dict | None:
    """The process with this pid in the GPU's latest sample, or None."""
    return next((p for p in gpu.processes or [] if p.get("pid") == pid), None)


def owner_of(process: dict):
    """The researcher who owns the process: its run's owner when the fleet started it, else its OS user's."""
    return ProcessOwners([process]).of(process)


def request_stop(user, gpu_uuid: str, pid: int) -> ProcessStop:
    """Record the request and hand it to the node's worker after commit; refuse what this user may not end."""
    gpu = GPU.objects.select_related("node").filter(uuid=gpu_uuid).first()
    process = reported_process(gpu, pid) if gpu else None
    if process is None:
        raise StopRefused(f"No process {pid} is running on GPU {gpu_uuid} now.")
    owner = owner_of(process)
    if not (user.is_staff or (owner is not None and owner.pk == user.pk)):
        raise StopRefused("Only the owner of a process or an admin may end it.", forbidden=True)
    with transaction.atomic():
        pending = ProcessStop.objects.filter(gpu=gpu, pid=pid, status=ReclaimStatus.REQUESTED).first()
        if pending:
            return pending
        stop = ProcessStop.objects.create(
            requested_by=user,
            node=gpu.node,
            gpu=gpu,
            owner=owner,
            os_user=process.get("user") or "",
            pid=pid,
            cmdline=process.get("cmdline") or "",
            process_started_at=started(process),
            grace_s=settings.RUN_CANCEL_GRACE_S,
        )
        queue = node_queue(gpu.node.hostname)
        transaction.on_commit(lambda: stop_process.apply_async(args=[stop.pk], queue=queue))
    return stop


def started(process: dict) -> datetime | None:
    seconds = process.get("started_at")
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=UTC)


def end_requested(stop_pk: int) -> str:
    """On the node worker: end the process if it is still the one asked for; the row says how it went."""
    if not ProcessStop.objects.filter(pk=stop_pk, status=ReclaimStatus.REQUESTED, signalled_at=None).update(
        signalled_at=timezone.now()
    ):
        return "claimed elsewhere"
    stop = ProcessStop.objects.get(pk=stop_pk)
    try:
        status, error = signal_process(stop)
    except Exception as exc:  # whatever happens, the row says how it ended
        status, error = ReclaimStatus.FAILED, f"{type(exc).__name__}: {exc}"
    ProcessStop.objects.filter(pk=stop_pk).update(status=status, error=error, finished_at=timezone.now())
    return status


@shared_task(name="monitoring.tasks.stop_process", ignore_result=True, soft_time_limit=settings.RUN_CANCEL_GRACE_S + 60)
def stop_process(stop_pk: int) -> str:
    """Runs on the node worker (queue node.<hostname>): end one process a researcher or an admin asked to end."""
    return end_requested(stop_pk)
