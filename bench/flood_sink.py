"""The machine floor of the blast-radius bench: somewhere for a flooder to send that is not the server.

On one machine the flooder's own CPU competes with the server and the good agents; a flooder on another host
would not. bench/ingest_isolation.py's floor phase aims the same flooder processes at this sink, in a process
of its own, while the good agents stream to the server: the delay left is what the machine alone costs.

The sink answers as the server answers a flood, so the flooder does the same work: the shipped per-node limits
(monitoring/ingest/limits.py, per token), frames read and dropped, close 4429 when over them, HTTP 429 with
Retry-After while the node cools down, 1009 over the frame size, no per-message deflate. It has no Django, no
database and no validation and sends no error frames, so it costs little; its CPU is reported all the same.
"""

import asyncio
import math
import time
from http import HTTPStatus

from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from monitoring.ingest.limits import CLOSE_TOO_FAST, RateLimit


class Sink:
    def __init__(self, frames_per_s: float, bytes_per_s: float, burst_s: float, max_frame_bytes: int):
        self.allowance = (frames_per_s, bytes_per_s, burst_s)
        self.max_frame_bytes = max_frame_bytes
        self.limits: dict[str, RateLimit] = {}
        self.cooling: set[str] = set()

    def limit(self, token: str) -> RateLimit:
        if token not in self.limits:
            self.limits[token] = RateLimit(*self.allowance)
        return self.limits[token]

    def refuse_cooling(self, ws: ServerConnection, request: Request) -> Response | None:
        token = request.headers.get("Authorization", "")
        if token not in self.cooling:
            return None
        wait = self.limit(token).recovery_s(time.monotonic())
        if wait <= 0:
            self.cooling.discard(token)
            return None
        headers = Headers({"Retry-After": str(max(1, math.ceil(wait))), "Content-Type": "text/plain; charset=utf-8"})
        return Response(429, HTTPStatus(429).phrase, headers, f"rate_limited: wait {wait:.1f} s\n".encode())

    async def drain(self, ws: ServerConnection) -> None:
        token = ws.request.headers.get("Authorization", "")
        limit = self.limit(token)
        try:
            async for message in ws:
                size = len(message)
                if limit.over(size) is not None:
                    limit.overdraw(size)
                    self.cooling.add(token)
                    await ws.close(CLOSE_TOO_FAST, "rate limited")
                    return
        except ConnectionClosed as closed:
            too_big = closed.sent is not None and closed.sent.code == 1009
            if too_big and limit.over(self.max_frame_bytes) is not None:  # refused unread: charged as the server does
                limit.overdraw(self.max_frame_bytes)
                self.cooling.add(token)

    async def serve(self, ports, seconds: float) -> None:
        async with serve(
            self.drain,
            "127.0.0.1",
            0,
            process_request=self.refuse_cooling,
            max_size=self.max_frame_bytes,
            # Read on after closing, as uvicorn does: with a bounded queue the reading stops while close() waits
            # for the flooder's answer, which is stuck behind its unread frames, for the whole close timeout.
            max_queue=None,
            compression=None,
        ) as server:
            ports.put(server.sockets[0].getsockname()[1])
            await asyncio.sleep(seconds)


def run_sink(ports, seconds: float, frames_per_s: float, bytes_per_s: float, burst_s: float, max_frame: int) -> None:
    """The sink in a process of its own (multiprocessing target); its port goes to ports."""
    asyncio.run(Sink(frames_per_s, bytes_per_s, burst_s, max_frame).serve(ports, seconds))
