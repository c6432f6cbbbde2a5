"""Hand committed telemetry to the live pages (monitoring.live.fanout), never on the write path's time.

The live fan-out is its own module; until it is installed these calls do nothing.
"""

import asyncio
import logging

log = logging.getLogger(__name__)


def _live():
    try:
        from monitoring.live import fanout as live
    except ImportError:
        return None
    return live


async def gpu_updates(updates: list) -> None:
    live = _live()
    if live is not None and updates:
        await live.apublish_gpu_updates(updates)


async def node_status(hostname: str, status: str) -> None:
    live = _live()
    if live is not None:
        try:
            await live.apublish_node_status(hostname, status)
        except Exception:
            log.exception("could not publish that %s is %s", hostname, status)


class Publisher:
    """Publishes flush results in order, one at a time, on its own task; the writer never waits for it."""

    def __init__(self):
        self._queue: asyncio.Queue = asyncio.Queue()
        self._task: asyncio.Task | None = None

    def send(self, result) -> None:
        if not result.gpu_updates and not result.nodes_online:
            return
        self._queue.put_nowait(result)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="ingest-publisher")

    async def _run(self) -> None:
        while True:
            result = await self._queue.get()
            try:
                for hostname in result.nodes_online:
                    await node_status(hostname, "online")
                await gpu_updates(result.gpu_updates)
            except Exception:
                log.exception("could not publish %d GPU updates", len(result.gpu_updates))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
