"""Ending one GPU process on request: checked here, carried out by the node worker like a run's cancel.

The owner is whoever training/owners.py says owns the process; a researcher may end their own processes, an
admin any. A process of a fleet run (the ingest believed its claim, monitoring/ingest/claims.py) is not
ended alone: ending one rank would leave the others to crash. The whole run is asked to stop here, at
once, exactly as its Cancel does (training/cancel.py: SIGTERM to every process, a checkpoint, SIGKILL
after RUN_CANCEL_GRACE_S), and the node worker only waits for the process to go. Any other process: the
node worker checks the pid still names the same process (start time, command line, OS user) before it
sends SIGTERM, then SIGKILL after RUN_CANCEL_GRACE_S, the grace a cancelled run gets.
"""

from datetime import UTC, datetime

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fleet.celery import node_queue
from inventory.models import GPU
from monitoring.alerts.choices import ReclaimStatus
from monitoring.alerts.ending import RUN_STOP_MARGIN_S, end_with_run, signal_process, unfinished_run
from monitoring.processes.models import ProcessStop
from monitoring.storage import latest
from training.cancel import CancelRefused, ask_to_stop
from training.owners import ProcessOwners, believed_run


class StopRefused(Exception):
    """The process cannot be ended by this user: ``status`` is 403 (not theirs), 404 (no such process) or 409
    (it is not the run the request expected)."""

    def __init__(self, message: str, status: int = 404):
        super().__init__(message)
        self.status = status

    @property
    def forbidden(self) -> bool:
        return self.status == 403


def reported_process(gpu: GPU, pid: int) -> dict | None:
    """The process with this pid in the GPU's latest sample, or None."""
    return next((p for p in latest.of(gpu).processes or [] if p.get("pid") == pid), None)


def owner_of(process: dict):
    """The researcher who owns the process: its run's owner when the fleet started it, else its OS user's."""
    return ProcessOwners([process]).of(process)


def run_process_count(run_id: int) -> int:
    """How many processes of the run the fleet's GPUs report now (one process on several GPUs counts once)."""
    seen = set()
    for gpu in latest.with_state(GPU.objects.filter(latest.running(run_id))).select_related("node"):
        seen.update((gpu.node.hostname, p.get("pid")) for p in latest.of(gpu).processes if believed_run(p) == run_id)
    return len(seen)


def request_stop(user, gpu_uuid: str, pid: int, expected_run: int | None = None) -> ProcessStop:
    """Record the request and hand it to the node's worker after commit; refuse what this user may not end.

    For a running run's process, the run is asked to stop now, as its Cancel would. ``expected_run`` is the
    run the asker was shown (the page's confirmation names it): a pid that belongs to another run or to none
    now is refused. A finished run's leftover process is ended alone, like any other.
    """
    gpu = GPU.objects.select_related("node", "state").filter(uuid=gpu_uuid).first()
    process = reported_process(gpu, pid) if gpu else None
    if process is None:
        raise StopRefused(f"No process {pid} is running on GPU {gpu_uuid} now.")
    owner = owner_of(process)
    if not (user.is_staff or (owner is not None and owner.pk == user.pk)):
        raise StopRefused("Only the owner of a process or an admin may end it.", status=403)
    claimed = believed_run(process)
    if expected_run is not None and claimed != expected_run:
        now = f"run #{claimed}'s" if claimed else "no run's"
        raise StopRefused(f"Process {pid} is {now} now, not run #{expected_run}'s: nothing was ended.", status=409)
    run = unfinished_run(claimed)
    with transaction.atomic():
        pending = ProcessStop.objects.filter(gpu=gpu, pid=pid, status=ReclaimStatus.REQUESTED).first()
        if pending:
            return pending
        if run is not None:
            try:
                ask_to_stop(run, user, stop_reason(user, gpu, pid))
            except CancelRefused:
                run = None  # it ended meanwhile: what is left is a process like any other
        stop = ProcessStop.objects.create(
            requested_by=user,
            node=gpu.node,
            gpu=gpu,
            owner=owner,
            os_user=process.get("user") or "",
            pid=pid,
            run=run,
            cmdline=process.get("cmdline") or "",
            process_started_at=started(process),
            grace_s=settings.RUN_CANCEL_GRACE_S,
        )
        queue = node_queue(gpu.node.hostname)
        transaction.on_commit(lambda: stop_process.apply_async(args=[stop.pk], queue=queue))
    return stop


def stop_reason(user, gpu: GPU, pid: int) -> str:
    """The run's end message, as a cancel's ("Cancelled by alice.") with where it was asked from."""
    where = f"{gpu.node.hostname} GPU {gpu.index}"
    return f"Cancelled by {user.get_username()} from the process table (End on pid {pid}, {where})."


def started(process: dict) -> datetime | None:
    seconds = process.get("started_at")
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=UTC)


def end_requested(stop_pk: int) -> str:
    """On the node worker: end the process if it is still the one asked for; the row says how it went."""
    if not ProcessStop.objects.filter(pk=stop_pk, status=ReclaimStatus.REQUESTED, signalled_at=None).update(
        signalled_at=timezone.now()
    ):
        return "claimed elsewhere"
    stop = ProcessStop.objects.select_related("run").get(pk=stop_pk)
    try:
        # A run's process: its run was asked to stop with the request; wait for the process to go with it.
        status, error = end_with_run(stop, stop.run) if stop.run is not None else signal_process(stop)
    except Exception as exc:  # whatever happens, the row says how it ended
        status, error = ReclaimStatus.FAILED, f"{type(exc).__name__}: {exc}"
    ProcessStop.objects.filter(pk=stop_pk).update(status=status, error=error, finished_at=timezone.now())
    return status


TIME_LIMIT_S = settings.RUN_CANCEL_GRACE_S + RUN_STOP_MARGIN_S + 60


@shared_task(name="monitoring.tasks.stop_process", ignore_result=True, soft_time_limit=TIME_LIMIT_S)
def stop_process(stop_pk: int) -> str:
    """Runs on the node worker (queue node.<hostname>): end one process a researcher or an admin asked to end."""
    return end_requested(stop_pk)
