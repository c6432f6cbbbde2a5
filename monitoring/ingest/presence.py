"""Offline rule: a node is offline once it has sent nothing for 3 intervals; it is back on its next frame.

The check runs as an asyncio task inside each ingest process every SWEEP_S seconds, so a silent
node is marked within 3 intervals + SWEEP_S (3.5 s at the default 1 s interval), whatever the
workers are busy with; Celery beat runs the same check every BACKSTOP_S seconds in case no ingest
process is up. The flip is a compare-and-set in SQL, so two processes never both report it.
A process whose agents have all gone keeps checking until they could have been marked, then stops:
the nodes of other processes are theirs to mark and announce to their live pages.
"""

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from inventory.choices import NodeStatus
from monitoring.ingest import publish

log = logging.getLogger(__name__)

MISSED_INTERVALS = 3
SWEEP_S = 0.5
BACKSTOP_S = 10.0

MARK_OFFLINE = """
    WITH flipped AS (
        UPDATE fleet_node SET status = %s
        WHERE status = %s AND (last_seen IS NULL OR last_seen < %s)
        RETURNING id, hostname
    ), logged AS (
        INSERT INTO monitoring_nodestatuschange (node_id, old_status, new_status, reason, created)
        SELECT id, %s, %s, %s, %s FROM flipped
    )
    SELECT hostname FROM flipped ORDER BY hostname
"""


def silence_limit() -> timedelta:
    return timedelta(seconds=MISSED_INTERVALS * settings.AGENT_INTERVAL_S)


def mark_silent_nodes_offline(now: datetime | None = None) -> list[str]:
    """Flip online nodes that have been silent too long to offline; returns their hostnames."""
    now = now or timezone.now()
    online, offline = NodeStatus.ONLINE.value, NodeStatus.OFFLINE.value
    reason = f"no telemetry for {MISSED_INTERVALS} intervals ({silence_limit().total_seconds():g} s)"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(MARK_OFFLINE, [offline, online, now - silence_limit(), online, offline, reason, now])
        hostnames = [row[0] for row in cursor.fetchall()]
    if hostnames:
        log.info("marked offline (silent for %s): %s", silence_limit(), ", ".join(hostnames))
    return hostnames


def _sweep_once() -> list[str]:
    close_old_connections()
    return mark_silent_nodes_offline()


class Sweeper:
    """The in-process offline check; started by the first agent connection of the process."""

    def __init__(self, serving: Callable[[], bool]):
        self._serving = serving
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="ingest-offline-sweeper")

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _run(self) -> None:
        sweep = sync_to_async(_sweep_once, thread_sensitive=True)
        unserved_since = None
        while True:
            await asyncio.sleep(SWEEP_S)
            try:
                for hostname in await sweep():
                    await publish.node_status(hostname, NodeStatus.OFFLINE.value)
            except Exception:
                log.exception("offline check failed; trying again in %s s", SWEEP_S)
            if self._serving():
                unserved_since = None
            elif unserved_since is None:
                unserved_since = time.monotonic()
            elif time.monotonic() - unserved_since > silence_limit().total_seconds() + 2 * SWEEP_S:
                log.info("no agent is connected to this process any more; its offline check stops")
                return

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


_sweepers: dict[asyncio.AbstractEventLoop, Sweeper] = {}


def start_sweeper(serving: Callable[[], bool]) -> Sweeper:
    """Check for silent nodes while `serving()` says this process has agents, and a while after."""
    loop = asyncio.get_running_loop()
    sweeper = _sweepers.setdefault(loop, Sweeper(serving))
    sweeper.start()
    return sweeper


async def close_sweeper() -> None:
    found = _sweepers.pop(asyncio.get_running_loop(), None)
    if found is not None:
        await found.close()
