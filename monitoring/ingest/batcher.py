"""One batcher per server process: frames from every connection wait a few milliseconds, then go in together.

Each connection awaits its frame's future and acks only once the flush holding it has committed.
Flushes run one at a time on their own thread (and database connection), in arrival order, so a
connection's frames commit in seq order. A flush that fails on a passing fault (connection lost,
deadlock) is retried; one that fails for any other reason is split in halves, again and again, so
that only the frame at fault is refused and every other frame of the batch is stored and acked.
The flushing task is supervised: a fault outside the write fails only its batch (as a passing
fault, so those agents replay), and a task that ends anyway is restarted with its cause logged.
"""

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import psycopg
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.utils import timezone

from monitoring.ingest import publish
from monitoring.ingest.writer import FlushResult, Frame, write_frames
from monitoring.prometheus import server as server_metrics
from monitoring.storage.partitions import PARTITIONS

log = logging.getLogger(__name__)

RETRIES = 3
RETRY_PAUSE_S = 0.2
# Faults of the database connection rather than of the data: Django's, and psycopg's own from the bound cursor.
PASSING = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


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
    def __init__(self, flush_s: float, max_samples: int):
        self.flush_s = flush_s
        self.max_samples = max_samples
        self.flushes = 0
        self.recoveries = 0  # faults the writer went on after (a batch failed outside the write, a restart)
        self._pending: list[tuple[Frame, asyncio.Future]] = []
        self._pending_samples = 0
        self._oldest = 0.0
        self._arrived = asyncio.Event()
        self._full = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-writer")
        self._task: asyncio.Task | None = None
        self._closing = False
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
        self._keep_running(loop)
        return future

    def _keep_running(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run(), name="ingest-batcher")
            self._task.add_done_callback(self._stopped)

    def _stopped(self, task: asyncio.Task) -> None:
        """The supervisor: a flushing task that ended other than by close() is restarted, and the cause logged."""
        if task.cancelled() or self._closing:
            return
        self.recoveries += 1
        log.error("the ingest writer stopped (%r); restarting it", task.exception(), exc_info=task.exception())
        self._keep_running(asyncio.get_running_loop())

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
            try:
                await self._flush(batch)
            except Exception as exc:  # a fault of ours, not of the data: those agents replay
                self.recoveries += 1
                log.exception("a flush of %d frames failed outside the write; the writer goes on", len(batch))
                self._fail(batch, exc, permanent=False)

    async def _flush(self, batch: list[tuple[Frame, asyncio.Future]]) -> None:
        batch = self._drop_broken(batch)
        if not batch:
            return
        frames = [frame for frame, _ in batch]
        started = time.perf_counter()
        try:
            result = await self._write_with_retries(frames)
        except Exception as exc:
            if len(batch) > 1 and not isinstance(exc, PASSING):
                half = len(batch) // 2  # in arrival order, so each connection's frames still commit in seq order
                await self._flush(batch[:half])
                await self._flush(batch[half:])
                return
            if not isinstance(exc, PASSING):
                await self._settle(batch[0][0])
            self._fail(batch, exc)
            return
        self.flushes += 1
        server_metrics.record_flush(time.perf_counter() - started, len(frames), sum(len(f.samples) for f in frames))
        for frame, future in batch:
            if frame.link is not None and result.connections.get(frame.node_id, frame.link.connection) != (
                frame.link.connection
            ):
                frame.link.replaced = True
            if not future.done():
                future.set_result(None)
        self._publisher.send(result)

    async def _settle(self, frame: Frame) -> None:
        """Record the seq of a frame refused for good (without its samples), so resume_seq can pass it."""
        try:
            await self._write_with_retries([replace(frame, samples=[])])
        except Exception as exc:
            log.error("could not record seq %d of node %d as settled: %r", frame.seq, frame.node_id, exc)

    async def _write_with_retries(self, frames: list[Frame]) -> FlushResult:
        loop = asyncio.get_running_loop()
        for attempt in range(RETRIES):
            try:
                return await loop.run_in_executor(self._executor, self._write, frames)
            except PASSING as exc:
                if attempt == RETRIES - 1:
                    raise
                log.warning("flush of %d frames failed (%s); retrying", len(frames), exc)
                PARTITIONS.reset()
                await loop.run_in_executor(self._executor, close_connection)
                await asyncio.sleep(RETRY_PAUSE_S * (attempt + 1))
        raise AssertionError("unreachable")

    def _write(self, frames: list[Frame]) -> FlushResult:
        close_old_connections()
        started = time.perf_counter()
        result = write_frames(frames, timezone.now())
        log.debug("flushed %d frames, %d samples in %.1f ms", len(frames), result.samples, self._ms(started))
        return result

    @staticmethod
    def _ms(started: float) -> float:
        return (time.perf_counter() - started) * 1000

    def _fail(self, batch: list[tuple[Frame, asyncio.Future]], exc: Exception, permanent: bool | None = None) -> None:
        """Refuse bad data for good; after a passing fault, break the connections so they replay from the gap."""
        if permanent is None:
            permanent = not isinstance(exc, PASSING)
        log.error("could not store %d frames: %r", len(batch), exc)
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        for frame, future in batch:
            if frame.link is not None and not permanent:
                frame.link.broken = True
            if not future.done():
                future.set_exception(StoreError(reason, permanent))
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
        self._closing = True
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


def queued_frames() -> int:
    """Frames accepted and waiting for the next flush in this process."""
    return sum(len(each._pending) for each in list(_batchers.values()))


server_metrics.batcher_queue.set_function(queued_frames)


def batcher() -> Batcher:
    """This process's batcher (one per event loop)."""
    loop = asyncio.get_running_loop()
    if loop not in _batchers:
        flush_s = settings.INGEST_FLUSH_MS / 1000
        _batchers[loop] = Batcher(flush_s, settings.INGEST_FLUSH_SAMPLES)
    return _batchers[loop]


async def close_batcher() -> None:
    found = _batchers.pop(asyncio.get_running_loop(), None)
    if found is not None:
        await found.close()
