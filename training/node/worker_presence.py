"""A node worker says it is alive, and how many runs it could take now, every heartbeat.

The queue reconciler (training/dispatch/reconcile.py) reads it: a run waiting for a node whose worker is alive
and had room, yet never looked at the run, lost its message; a run whose node has no worker alive
waits for that worker, and its page says since when.
"""

import logging
import threading

from celery import signals
from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from inventory.models import Node

log = logging.getLogger(__name__)

QUEUE_PREFIX = "node."


def node_hostnames(consumer) -> list[str]:
    names = consumer.app.amqp.queues.consume_from or consumer.app.amqp.queues
    return [name[len(QUEUE_PREFIX) :] for name in names if name.startswith(QUEUE_PREFIX)]


def idle_slots(consumer) -> int:
    from celery.worker import state

    concurrency = getattr(consumer.controller, "concurrency", None) or 1
    return max(0, concurrency - len(state.active_requests))


def record(hostnames: list[str], worker: str, slots: int) -> None:
    from training.models import WorkerPresence

    now = timezone.now()
    for node in Node.objects.filter(hostname__in=hostnames):
        WorkerPresence.objects.update_or_create(
            node=node, defaults={"worker": worker, "seen_at": now, "idle_slots": slots}
        )


def beat(consumer, hostnames: list[str], stop: threading.Event) -> None:
    worker = consumer.hostname or ""
    while not stop.is_set():
        try:
            record(hostnames, worker, idle_slots(consumer))
        except DatabaseError:
            log.warning("could not record this node worker's presence", exc_info=True)
            connection.close()
        stop.wait(settings.RUN_HEARTBEAT_S)


@signals.worker_ready.connect
def start_presence(sender=None, **kwargs) -> None:
    """In a node worker (a ``node.<hostname>`` queue), beat in a thread of the main process."""
    if sender is None:
        return
    hostnames = node_hostnames(sender)
    if not hostnames:
        return
    stop = threading.Event()
    threading.Thread(target=beat, args=(sender, hostnames, stop), name="node-presence", daemon=True).start()
    signals.worker_shutdown.connect(lambda **_: stop.set(), weak=False)
