"""A node worker says it is alive, and how many runs it could take now, every heartbeat.

It also says which environments runs may use there (every kind's ``discover()``: the venvs and conda envs
under RUN_ENV_DIRS …), looked for at most every DISCOVER_EVERY_S. The queue reconciler
(training/dispatch/reconcile.py) reads it: a run waiting for a node whose worker is alive
and had room, yet never looked at the run, lost its message; a run whose node has no worker alive
waits for that worker, and its page says since when.
"""

import logging
import threading
import time

from celery import signals
from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from inventory.models import Node

log = logging.getLogger(__name__)

QUEUE_PREFIX = "node."
DISCOVER_EVERY_S = 60.0


def node_hostnames(consumer) -> list[str]:
    names = consumer.app.amqp.queues.consume_from or consumer.app.amqp.queues
    return [name[len(QUEUE_PREFIX) :] for name in names if name.startswith(QUEUE_PREFIX)]


def idle_slots(consumer) -> int:
    from celery.worker import state

    concurrency = getattr(consumer.controller, "concurrency", None) or 1
    return max(0, concurrency - len(state.active_requests))


def offered() -> dict[str, list[str]]:
    """What this node offers runs, by environment kind: {"venv": ["/srv/envs/torch"], ...}."""
    from training import environments

    found = {}
    for name in environments.names():
        try:
            found[name] = environments.get(name).discover()
        except OSError:
            log.warning("could not look for %s environments", name, exc_info=True)
            found[name] = []
    return found


def record(hostnames: list[str], worker: str, slots: int, envs: dict[str, list[str]] | None = None) -> None:
    from training.models import WorkerPresence

    now = timezone.now()
    defaults = {"worker": worker, "seen_at": now, "idle_slots": slots}
    if envs is not None:
        defaults["environments"] = envs
    for node in Node.objects.filter(hostname__in=hostnames):
        WorkerPresence.objects.update_or_create(node=node, defaults=defaults)


def beat(consumer, hostnames: list[str], stop: threading.Event) -> None:
    worker = consumer.hostname or ""
    looked_at = None
    while not stop.is_set():
        try:
            due = looked_at is None or time.monotonic() - looked_at >= DISCOVER_EVERY_S
            record(hostnames, worker, idle_slots(consumer), offered() if due else None)
            looked_at = time.monotonic() if due else looked_at
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
