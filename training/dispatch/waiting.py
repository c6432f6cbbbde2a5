"""What a run that has not started waits for, in words for its page and the API."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from fleet.localtime import when
from training.choices import RunNodeStatus, RunStatus
from training.models import Run, WorkerPresence


def ago(moment) -> str:
    seconds = max(0, int((timezone.now() - moment).total_seconds()))
    if seconds < 90:
        return f"{seconds} s ago"
    if seconds < 5400:
        return f"{round(seconds / 60)} min ago"
    return f"{seconds / 3600:.1f} h ago"


def worker_alive(presence: WorkerPresence | None) -> bool:
    if presence is None:
        return False
    silent = settings.RUN_MISSED_HEARTBEATS * settings.RUN_HEARTBEAT_S
    return presence.seen_at >= timezone.now() - timedelta(seconds=silent)


def worker_seen(hostname: str, presence: WorkerPresence | None) -> str:
    if presence is None:
        return f"the node worker of {hostname}, never seen"
    return f"the node worker of {hostname}, last seen {ago(presence.seen_at)}"


def waiting_for(run: Run) -> str:
    """What a run that has not started waits for, in words for its page; empty once it started."""
    if run.status == RunStatus.SCHEDULED and run.start_at:
        return f"waiting for its booking to begin ({when(run.start_at)})"
    if run.status != RunStatus.QUEUED:
        return ""
    parts = run.nodes.filter(status=RunNodeStatus.QUEUED).select_related("node", "node__worker_presence")
    reasons = []
    for part in parts:
        presence = getattr(part.node, "worker_presence", None)
        if not worker_alive(presence):
            reasons.append(f"waiting for {worker_seen(part.node.hostname, presence)}")
        elif part.seen_at:
            reasons.append(f"waiting for its GPUs on {part.node.hostname} to be free")
        else:
            reasons.append(f"waiting for the node worker of {part.node.hostname} to take it")
    if not parts and run.sweep_id:
        reasons.append("waiting for a free GPU for its sweep")
    return "; ".join(reasons)
