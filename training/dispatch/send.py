"""Sending a run's share to its node's queue, by task name, from the web app, sweeps and the reconciler."""

import logging

from celery import current_app
from django.db import transaction

from fleet.celery import node_queue
from training import broadcast
from training.choices import RunStatus
from training.models import Run, RunNode
from training.serializers import state_payload

log = logging.getLogger(__name__)

RUN_ON_NODE = "training.tasks.run_on_node"


def send_share(part: RunNode) -> None:
    """One ``run_on_node`` message on ``node.<hostname>``; raises when the broker cannot take it."""
    current_app.send_task(RUN_ON_NODE, args=[part.pk], queue=node_queue(part.node.hostname))


def send_shares(run: Run, parts: list[RunNode]) -> None:
    """Send each share of a run just queued (after the commit that queued it); fail the run if the broker refuses."""
    try:
        for part in parts:
            send_share(part)
    except Exception as error:  # the broker is down: say so on the run rather than leave it queued forever
        log.exception("could not queue run %s", run.pk)
        fail_unqueued(run, f"Could not queue the run: {error}")


def fail_unqueued(run: Run, reason: str) -> bool:
    """End a run still waiting in the queue as failed, through ``Run.finish`` so ``run_finished`` fires.

    A run a node worker took or someone cancelled meanwhile is left as it is. Whether it was failed.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run.pk).first()
        if run is None or run.status != RunStatus.QUEUED:
            return False
        run.finish(RunStatus.FAILED, error=reason)
        broadcast.send_after_commit(run.pk, state_payload(run))
    return True
