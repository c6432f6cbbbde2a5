"""Sending a run's share to its node's queue, by task name, from the web app, sweeps and the reconciler."""

from celery import current_app

from fleet.celery import node_queue
from training.models import RunNode

RUN_ON_NODE = "training.tasks.run_on_node"


def send_share(part: RunNode) -> None:
    """One ``run_on_node`` message on ``node.<hostname>``; raises when the broker cannot take it."""
    current_app.send_task(RUN_ON_NODE, args=[part.pk], queue=node_queue(part.node.hostname))
