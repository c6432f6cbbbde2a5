"""No run stuck in the queue: find shares no node worker took, re-send lost messages, or fail with a reason.

A share's message can be lost (a broker restarted without persistence, a queue purged). The reconciler
knows it is lost when the node's worker is alive and had room for a run at its last heartbeat
(training/node/worker_presence.py), yet has not looked at the share for ``RUN_QUEUE_TIMEOUT_S``: a worker with room
takes a waiting message at once. It then sends the share once more. A share whose node has no live worker
for that long, or that was sent again and still not taken, ends its run failed, with a reason the run
page shows. Sending twice never starts a run twice: a node worker claims a share with a compare-and-set
on its row (training/node/worker.py ``claim``), so a second message finds it taken and does nothing.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from training import broadcast
from training.choices import RunNodeStatus, RunStatus
from training.dispatch.send import send_share
from training.dispatch.waiting import worker_alive, worker_seen
from training.models import IllegalTransition, Run, RunNode, WorkerPresence
from training.serializers import state_payload

log = logging.getLogger(__name__)

MAX_SENDS = 2


def reconcile_queued_runs() -> dict[str, list[int]]:
    """One pass of the reconciler; the run ids it sent again and those it failed."""
    cutoff = timezone.now() - timedelta(seconds=settings.RUN_QUEUE_TIMEOUT_S)
    waiting = RunNode.objects.filter(
        status=RunNodeStatus.QUEUED,
        run__status__in=(RunStatus.QUEUED, RunStatus.STARTING),
        run__cancel_requested_at__isnull=True,
        sent_at__lt=cutoff,
    ).select_related("node", "node__worker_presence")
    resent, failed = [], []
    for part in waiting:
        if part.seen_at and part.seen_at >= cutoff:
            continue  # its worker looks at it (its GPUs are busy): it waits in the queue as it should
        presence = getattr(part.node, "worker_presence", None)
        if worker_alive(presence) and presence.idle_slots > 0 and part.sends < MAX_SENDS:
            if resend(part):
                resent.append(part.run_id)
        elif fail(part, reason(part, presence)):
            failed.append(part.run_id)
    return {"resent": resent, "failed": failed}


def reason(part: RunNode, presence: WorkerPresence | None) -> str:
    waited = round(settings.RUN_QUEUE_TIMEOUT_S / 60, 1)
    if not worker_alive(presence):
        return (
            f"No node worker took this run within {waited:g} min: {worker_seen(part.node.hostname, presence)}. "
            "Ask an admin to start it, then launch the run again."
        )
    return (
        f"The node worker of {part.node.hostname} is alive but did not take this run within {waited:g} min, "
        f"even after it was sent again ({part.sends} times). Launch it again, or ask an admin to look at the broker."
    )


def resend(part: RunNode) -> bool:
    with transaction.atomic():
        updated = RunNode.objects.filter(pk=part.pk, status=RunNodeStatus.QUEUED, sends=part.sends).update(
            sends=part.sends + 1, sent_at=timezone.now()
        )
        if updated != 1:
            return False
        transaction.on_commit(lambda: send_share(part))
    log.warning("run %s: its message to %s was lost; sent again", part.run_id, part.node.hostname)
    return True


def fail(part: RunNode, error: str) -> bool:
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=part.run_id)
        if not RunNode.objects.filter(pk=part.pk, status=RunNodeStatus.QUEUED).exists():
            return False
        try:
            run.finish(RunStatus.FAILED, error=error)
        except IllegalTransition:
            return False
        broadcast.send_after_commit(run.pk, state_payload(run))
    log.warning("run %s failed in the queue: %s", part.run_id, error)
    return True
