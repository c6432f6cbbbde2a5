"""Live updates of a run to the browsers watching it, sent after the data they describe is committed."""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def send_after_commit(run_id: int, payload: dict) -> None:
    """Queue ``payload`` for the run's watchers once the current transaction commits."""
    transaction.on_commit(lambda: send_now(run_id, payload))


def send_now(run_id: int, payload: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(run_group(run_id), {"type": "run.update", "payload": payload})
    except Exception:  # a watcher missing an update must never fail the run
        log.warning("could not broadcast an update of run %s", run_id, exc_info=True)
