"""One batcher per server process: frames from every connection wait a few milliseconds, then go in together.

Each connection awaits its frame's future and acks only once the flush holding it has committed.
Flushes run one at a time on their own thread (and database connection), in arrival order, so a
connection's frames commit in seq order. A flush that fails on a passing fault (connection lost,
deadlock) is retried; one that fails on bad data is split into single frames so that only the
frame at fault is refused.
"""

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, close_old_connections, connection
from django.utils import timezone

from monitoring.ingest import publish
from monitoring.ingest.writer import FlushResult, Frame, write_frames
from monitoring.storage.partitions import PARTITIONS

log = logging.getLogger(__name__)

RETRIES = 3
RETRY_PAUSE_S = 0.2


class StoreError(Exception):
    """A frame that was not stored: permanent (bad data, refuse it) or passing (the agent should replay it)."""

    def __init__(self, message: str, permanent: bool):
        super().__init__(message)
        self.permanent = permanent


@dataclass
class Link:
    """One agent connection as the batcher sees it.

    Broken after a failed flush, so its later frames are not acked; replaced once a flush finds a newer
    connection of its node (perhaps in another server process).
    """

    connection: str = ""
    broken: bool = False
    replaced: bool = False


class Batcher:
    def __init__(self, flush_s: float, max_samples: int, method: str):
        self.flush_s = flush_s
        self.max_samples = max_samples
        self.method = method
        self.flushes = 0
        self._pending: list[tuple[Frame, asyncio.Future]] = []
        self._pending_samples = 0
        self._oldest = 0.0
        self._arrived = asyncio.Event()
        self._full = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-writer")
        self._task: asyncio.Task | None = None
        self._publisher = publish.Publisher()

    def submit(self, frame: Frame) -> asyncio.Future:
        """A future that resolves once frame is committed (or raises StoreError)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if frame.link is not None and frame.link.broken:
            future.set_exception(StoreError("an earlier frame of this connection failed", permanent=False))
            return future
        if not self._pending:
            self._oldest = loop.time()
        self._pending.append((frame, future))
        self._pending_samples += len(frame.samples)
        self._arrived.set()
        if self._pending_samples >= self.max_samples:
            self._full.set()
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run(), name="ingest-batcher")
        return future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._arrived.wait()
            wait = self._oldest + self.flush_s - loop.time()
            if wait > 0 and not self._full.is_set():
                try:
                    await asyncio.wait_for(self._full.wait(), wait)
                except TimeoutError:
                    pass
            batch, self._pending, self._pending_samples = self._pending, [], 0
            self._arrived.clear()
            self._full.clear()
            await self._flush(batch)

    async def _flush(self, batch: list[tuple[Frame, asyncio.Future]]) -> None:
        batch = self._drop_broken(batch)
        if not batch:
            return
        frames = [frame for frame, _ in batch]
        try:
            result = await self._write_with_retries(frames)
        except (DatabaseError, InterfaceError) as exc:
            if len(frames) > 1 and not isinstance(exc, OperationalError):
                for item in batch:
                    await self._flush([item])
                return
            self._fail(batch, exc)
            return
        self.flushes += 1
        for frame, future in batch:
            if frame.link is not None and result.connections.get(frame.node_id, frame.link.connection) != (
                frame.link.connection
            ):
                frame.link.replaced = True
            if not future.done():
                future.set_result(None)
        self._publisher.send(result)

    async def _write_with_retries(self, frames: list[Frame]) -> FlushResult:
        loop = asyncio.get_running_loop()
        for attempt in range(RETRIES):
            try:
                return await loop.run_in_executor(self._executor, self._write, frames)
            except OperationalError as exc:
                if attempt == RETRIES - 1:
                    raise
                log.warning("flush of %d frames failed (%s); retrying", len(frames), exc)
                PARTITIONS.reset()
                await asyncio.sleep(RETRY_PAUSE_S * (attempt + 1))
        raise AssertionError("unreachable")

    def _write(self, frames: list[Frame]) -> FlushResult:
        close_old_connections()
        started = time.perf_counter()
        result = write_frames(frames, timezone.now(), self.method)
        log.debug("flushed %d frames, %d samples in %.1f ms", len(frames), result.samples, self._ms(started))
        return result

    @staticmethod
    def _ms(started: float) -> float:
        return (time.perf_counter() - started) * 1000

    def _fail(self, batch: list[tuple[Frame, asyncio.Future]], exc: Exception) -> None:
        """Refuse bad data for good; after a passing fault, break the connections so they replay from the gap."""
        permanent = not isinstance(exc, OperationalError | InterfaceError)
        log.error("could not store %d frames: %s", len(batch), exc)
        for frame, future in batch:
            if frame.link is not None and not permanent:
                frame.link.broken = True
            if not future.done():
                future.set_exception(StoreError(str(exc).strip().splitlines()[0], permanent))
        # Later frames of a broken connection must not commit ahead of the one that failed.
        self._pending = self._drop_broken(self._pending)
        self._pending_samples = sum(len(frame.samples) for frame, _ in self._pending)

    @staticmethod
    def _drop_broken(batch: list[tuple[Frame, asyncio.Future]]) -> list[tuple[Frame, asyncio.Future]]:
        kept = []
        for frame, future in batch:
            if frame.link is not None and frame.link.broken:
                if not future.done():
                    future.set_exception(StoreError("an earlier frame of this connection failed", permanent=False))
            else:
                kept.append((frame, future))
        return kept

    async def close(self) -> None:
        """Stop flushing (pending frames are failed as passing faults) and release the writer's connection."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for _, future in self._pending:
            if not future.done():
                future.set_exception(StoreError("the server is stopping", permanent=False))
        self._pending = []
        await self._publisher.close()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, close_connection)
        self._executor.shutdown(wait=True)


def close_connection() -> None:
    """Close this thread's database connection (the name is looked up here, in the writer's thread)."""
    connection.close()


_batchers: dict[asyncio.AbstractEventLoop, Batcher] = {}


def batcher() -> Batcher:
    """This process's batcher (one per event loop)."""
    loop = asyncio.get_running_loop()
    if loop not in _batchers:
        flush_s = settings.INGEST_FLUSH_MS / 1000
        _batchers[loop] = Batcher(flush_s, settings.INGEST_FLUSH_SAMPLES, settings.INGEST_WRITER)
    return _batchers[loop]


async def close_batcher() -> None:
    found = _batchers.pop(asyncio.get_running_loop(), None)
    if found is not None:
        await found.close()
