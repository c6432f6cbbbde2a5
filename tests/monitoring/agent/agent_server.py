"""A real websockets server on 127.0.0.1 speaking the server side of protocol 1, scripted per test."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Self

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed


@dataclass
class Connection:
    """What the server saw on one agent connection."""

    path: str
    authorization: str | None
    messages: list = field(default_factory=list)
    close_code: int | None = None

    @property
    def hello(self) -> dict:
        return json.loads(self.messages[0])

    @property
    def samples(self) -> list[dict]:
        return [f for f in map(json.loads, self.messages[1:]) if f.get("type") == "samples"]

    @property
    def seqs(self) -> list[int]:
        return [f["seq"] for f in self.samples]


def welcome(hostname: str = "gpu-test", interval_s: float = 0.05, resume_seq: int = 0) -> str:
    return json.dumps({"type": "welcome", "node": hostname, "interval_s": interval_s, "resume_seq": resume_seq})


async def acking(ws: ServerConnection, conn: Connection, index: int) -> None:
    """The well-behaved server: welcome, then ack every samples frame."""
    await ws.send(welcome())
    async for message in ws:
        conn.messages.append(message)
        await ws.send(json.dumps({"type": "ack", "seq": json.loads(message)["seq"]}))


class AgentServer:
    def __init__(self, script=acking, port: int = 0, process_request=None) -> None:
        self.script = script
        self.port = port
        self.process_request = process_request
        self.connections: list[Connection] = []
        self.attempts = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    async def __aenter__(self) -> Self:
        self._server = await serve(self._handle, "127.0.0.1", self.port, process_request=self._process_request)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        self._server.close()
        await self._server.wait_closed()

    def _process_request(self, ws, request):
        self.attempts += 1
        if self.process_request is not None:
            return self.process_request(ws, request)
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        conn = Connection(ws.request.path, ws.request.headers.get("Authorization"))
        self.connections.append(conn)
        with contextlib.suppress(ConnectionClosed):
            conn.messages.append(await ws.recv())
            await self.script(ws, conn, len(self.connections) - 1)
        await ws.wait_closed()
        conn.close_code = ws.close_code


async def until(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)
