"""The websocket client: hello, welcome, then one samples frame per interval.

Sampling never waits for the network: frames go to a bounded buffer and are
sent while connected; after a reconnect every unacked frame is replayed in
order before new ones. Reconnects back off exponentially with full jitter; a server that refuses the
handshake with HTTP 429 (the node is cooling down after going over its rate limits) is waited out for
its Retry-After, bounded and with jitter added, and not counted as a failure.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import random
import time
import uuid
from collections.abc import Awaitable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from .buffer import FrameBuffer
from .cadence import Cadence
from .frames import MAX_FRAME_BYTES, Backend, encode, hello_frame, samples_frame

log = logging.getLogger(__name__)

AGENT_PATH = "/ws/agent/"
CLOSE_BAD_TOKEN = 4401
CLOSE_PROTOCOL_VIOLATION = 4400
MIN_INTERVAL_S = 0.05
MAX_INTERVAL_S = 3600.0
# However long a 429's Retry-After asks for, come back within this (a wrong or hostile value cannot park us).
MAX_RETRY_AFTER_S = 300.0


class _Stopped(Exception):
    """Raised inside the connection loop once stop() was called."""


class _TokenRefused(Exception):
    pass


class _RateLimited(Exception):
    """HTTP 429 at the handshake; wait_s is its Retry-After in seconds, None when it had none we can read."""

    def __init__(self, wait_s: float | None, reason: str) -> None:
        super().__init__(reason)
        self.wait_s = wait_s


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After header asks for (delay-seconds or an HTTP date), None when it cannot be read."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


def rate_limit_delay(wait_s: float) -> float:
    """The wait after a 429: what it asked for (at most MAX_RETRY_AFTER_S), plus up to a quarter more and half a
    second, so nodes refused together do not all come back in the same instant (nor before they may)."""
    wait_s = min(wait_s, MAX_RETRY_AFTER_S)
    return wait_s + random.uniform(0, wait_s / 4 + 0.5)


def agent_url(server: str) -> str:
    """ws(s)://HOST[:PORT] with /ws/agent/ added when the URL has no path."""
    parts = urlsplit(server)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    if scheme not in ("ws", "wss") or not parts.netloc:
        raise ValueError(f"server URL must look like ws://HOST:PORT or wss://HOST, got {server!r}")
    path = parts.path if parts.path not in ("", "/") else AGENT_PATH
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


class Agent:
    """Samples a backend every interval and streams the frames to the server."""

    def __init__(
        self,
        backend: Backend,
        server: str,
        token: str,
        hostname: str,
        interval: float = 1.0,
        buffer: FrameBuffer | None = None,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        welcome_timeout: float = 10.0,
    ) -> None:
        self.backend = backend
        self.cadence = Cadence()
        self.url = agent_url(server)
        self.token = token
        self.hostname = hostname
        self.interval = interval
        self.buffer = buffer if buffer is not None else FrameBuffer()
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.welcome_timeout = welcome_timeout
        self.session = uuid.uuid4().hex
        self.seq = 0
        self.connections = 0
        self._highest_sent = 0
        self._welcomed = False
        self._stop = asyncio.Event()
        self._new_frame = asyncio.Event()
        self._interval_changed = asyncio.Event()

    def stop(self) -> None:
        """Ask run() to close the connection (code 1000) and return."""
        self._stop.set()

    async def run(self) -> None:
        sampler = asyncio.create_task(self._sample_forever())
        try:
            await self._connect_forever()
        finally:
            sampler.cancel()
            await asyncio.gather(sampler, return_exceptions=True)

    async def _sample_forever(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            taken = due
            try:
                await self._take_frame()
            except Exception:
                log.exception("taking a sample failed; trying again next interval")
            self._interval_changed.clear()
            # Recomputed when the welcome changes the interval mid-wait; a slow
            # sample must not cause a burst of catch-up frames.
            due = max(taken + self.interval, loop.time())
            while await _wait(self._interval_changed, due - loop.time()):
                self._interval_changed.clear()
                due = max(taken + self.interval, loop.time())

    async def _take_frame(self) -> None:
        seq = self.seq + 1
        frame = self.cadence.thin(await asyncio.to_thread(samples_frame, self.backend, seq))
        self.seq = seq
        self.buffer.append(seq, encode(frame))
        self._new_frame.set()

    async def _connect_forever(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            self._welcomed = False
            try:
                await self._connect_once()
            except _Stopped:
                break
            except _TokenRefused:
                delay = self.backoff_cap * random.uniform(0.5, 1.0)
                log.error(
                    "server refused the token for %s (close code %d): check --token or ask an "
                    "admin for a new one (python manage.py fleet_add_node %s); retrying in %.1f s",
                    self.hostname,
                    CLOSE_BAD_TOKEN,
                    self.hostname,
                    delay,
                )
                await _wait(self._stop, delay)
                continue
            except _RateLimited as limited:
                if limited.wait_s is not None:
                    delay = rate_limit_delay(limited.wait_s)
                    log.warning(
                        "server asked to wait %g s (rate limit): %s; reconnecting in %.1f s (%d unacked frames)",
                        limited.wait_s,
                        limited,
                        delay,
                        len(self.buffer),
                    )
                    await _wait(self._stop, delay)
                    continue
                log.warning("server asked to wait (rate limit) without saying how long: %s", limited)
            except Exception as exc:
                log.warning("%s", self._describe(exc))
                if not isinstance(exc, (OSError, TimeoutError, ConnectionClosed, InvalidHandshake)):
                    log.debug("unexpected connection failure", exc_info=True)
            if self._welcomed:
                attempt = 0
            delay = random.uniform(0, min(self.backoff_cap, self.backoff_base * 2**attempt))
            attempt += 1
            log.info("reconnecting in %.1f s (%d unacked frames buffered)", delay, len(self.buffer))
            await _wait(self._stop, delay)

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, ConnectionClosed):
            code = exc.rcvd.code if exc.rcvd else None
            reason = exc.rcvd.reason if exc.rcvd else ""
            if code == CLOSE_PROTOCOL_VIOLATION:
                return f"server closed the connection as a protocol violation (4400): {reason}"
            return f"connection to {self.url} closed (code {code}, {reason or 'no reason'})"
        if isinstance(exc, InvalidStatus):
            return f"server at {self.url} refused the websocket: HTTP {exc.response.status_code}"
        if isinstance(exc, TimeoutError):
            return f"server at {self.url} {exc or 'did not answer in time'}"
        if isinstance(exc, OSError):
            return f"cannot reach server {self.url}: {exc}"
        return f"connection to {self.url} failed: {exc!r}"

    async def _connect_once(self) -> None:
        ws = await self._unless_stopped(self._open())
        try:
            await self._unless_stopped(self._handshake(ws))
            await self._unless_stopped(self._stream(ws))
        except ConnectionClosed as exc:
            if exc.rcvd and exc.rcvd.code == CLOSE_BAD_TOKEN:
                raise _TokenRefused from exc
            raise
        finally:
            await ws.close(1000, "agent stopping" if self._stop.is_set() else "")

    async def _open(self) -> ClientConnection:
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            return await connect(
                self.url,
                additional_headers=headers,
                max_size=MAX_FRAME_BYTES,
                open_timeout=10,
                close_timeout=2,
            )
        except InvalidStatus as exc:
            if exc.response.status_code in (401, 403):
                raise _TokenRefused from exc
            if exc.response.status_code == 429:
                reason = (exc.response.body or b"").decode("utf-8", "replace").strip()[:200] or "HTTP 429"
                raise _RateLimited(retry_after_s(exc.response.headers.get("Retry-After")), reason) from exc
            raise
        except InvalidURI as exc:
            raise ValueError(str(exc)) from exc

    async def _unless_stopped(self, work: Awaitable[Any]) -> Any:
        task = asyncio.ensure_future(work)
        stopper = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise _Stopped
        return task.result()

    async def _handshake(self, ws: ClientConnection) -> None:
        hello = await asyncio.to_thread(hello_frame, self.backend, self.hostname, self.session)
        await ws.send(encode(hello))
        try:
            async with asyncio.timeout(self.welcome_timeout):
                welcome = None
                while welcome is None:
                    frame = self._parse(await ws.recv())
                    if frame is not None and frame.get("type") == "welcome":
                        welcome = frame
                    elif frame is not None:
                        self._handle(frame)
        except TimeoutError:
            raise TimeoutError(f"sent no welcome within {self.welcome_timeout:g} s") from None
        self._on_welcome(welcome)

    def _on_welcome(self, welcome: dict) -> None:
        self._welcomed = True
        self.connections += 1
        self._apply_interval(welcome.get("interval_s"))
        resume = welcome.get("resume_seq")
        if _is_seq(resume):
            # Only frames already sent can be stored; never drop one the server has not seen.
            self.buffer.ack(min(resume, self._highest_sent))
        elif resume is not None:
            log.warning("ignoring welcome resume_seq %r: not a sequence number", resume)
        log.info(
            "connected to %s as %s; replaying %d unacked frames",
            self.url,
            welcome.get("node", self.hostname),
            len(self.buffer),
        )

    def _apply_interval(self, interval: object) -> None:
        if interval is None:
            return
        if (
            isinstance(interval, (int, float))
            and not isinstance(interval, bool)
            and MIN_INTERVAL_S <= interval <= MAX_INTERVAL_S
        ):
            if interval != self.interval:
                log.info("server set the sampling interval to %s s", interval)
                self.interval = float(interval)
                self._interval_changed.set()
        else:
            log.warning("ignoring welcome interval_s %r: not a number of seconds", interval)

    async def _stream(self, ws: ClientConnection) -> None:
        tasks = [asyncio.create_task(self._send_frames(ws)), asyncio.create_task(self._receive(ws))]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _send_frames(self, ws: ClientConnection) -> None:
        sent = 0
        while True:
            self._new_frame.clear()
            for seq, text in self.buffer.after(sent):
                await ws.send(text)
                sent = seq
                self._highest_sent = max(self._highest_sent, seq)
            await self._new_frame.wait()

    async def _receive(self, ws: ClientConnection) -> None:
        while True:
            frame = self._parse(await ws.recv())
            if frame is not None:
                self._handle(frame)

    def _parse(self, message: str | bytes) -> dict | None:
        if isinstance(message, bytes):
            log.warning("server sent a binary frame (%d bytes); ignored", len(message))
            return None
        try:
            frame = json.loads(message)
        except ValueError:
            log.warning("server sent a frame that is not JSON: %.80r; ignored", message)
            return None
        if not isinstance(frame, dict):
            log.warning("server sent a frame that is not a JSON object: %.80r; ignored", message)
            return None
        return frame

    def _handle(self, frame: dict) -> None:
        kind = frame.get("type")
        if kind == "ack":
            seq = frame.get("seq")
            if _is_seq(seq):
                self.buffer.ack(min(seq, self._highest_sent))
            else:
                log.warning("server sent an ack without a valid seq: %.80r; ignored", frame)
        elif kind == "error":
            self._on_error(frame)
        elif kind == "welcome":
            self._apply_interval(frame.get("interval_s"))
        else:
            log.debug("ignoring a %r frame from the server", kind)

    def _on_error(self, frame: dict) -> None:
        code, detail, seq = frame.get("code"), frame.get("detail"), frame.get("seq")
        if _is_seq(seq) and self.buffer.discard(seq):
            log.warning("server refused frame %d (%s: %s); dropped, not replayed", seq, code, detail)
        else:
            log.warning("server reported an error (%s): %s", code, detail)


async def _wait(event: asyncio.Event, seconds: float) -> bool:
    """Whether event was set within seconds."""
    try:
        await asyncio.wait_for(event.wait(), max(seconds, 0))
    except TimeoutError:
        return False
    return True


def _is_seq(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
