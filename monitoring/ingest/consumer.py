"""/ws/agent/: the server side of agent protocol v1 (docs/agent-protocol.md).

connect() checks the node token; the first frame must be a hello; every later samples frame is
validated, handed to this process's batcher, and acked once the flush holding it has committed.
Acks go out in seq order from one task per connection, so a slow flush never stops us reading.

A newer connection of a node closes the older one (4409): at once in the same process, and after
the older one's next flush in another process (each hello records the newest connection).
Agent connections use no channel layer: a consumer's channel-layer read, cancelled when it
disconnects, could hang in channels-redis and with it the server's shutdown.
"""

import asyncio
import json
import logging
import math
import time
import uuid

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from fleet.websocket import EventLoopDispatch, deny_handshake
from inventory.node_tokens import hash_token
from inventory.nodes import node_for_token
from monitoring.ingest import publish
from monitoring.ingest.batcher import Link, StoreError, batcher
from monitoring.ingest.hello import Welcome, accept_hello
from monitoring.ingest.limits import CLOSE_TOO_FAST, cool_down, cooling_down, limit_for
from monitoring.ingest.ownership import ForeignGPU, record_foreign_gpus
from monitoring.ingest.plain_frames import plain_samples
from monitoring.ingest.presence import start_sweeper
from monitoring.ingest.validation import FrameError, SamplesFrame, check_hello, check_samples, parse
from monitoring.ingest.writer import Frame
from monitoring.prometheus import server as server_metrics
from wire.jsontext import storable_json

log = logging.getLogger(__name__)

CLOSE_PROTOCOL_VIOLATION = 4400
CLOSE_BAD_TOKEN = 4401
CLOSE_REPLACED = 4409
CLOSE_NOT_STORED = 1011
CLOSE_TOO_BIG = 1009  # sent by the websocket layer (fleet/serving.py), which never hands us the message
# Frames a connection may have waiting for their commit before we stop reading from it.
IN_FLIGHT = 256


# This process's newest connection of each node.
current: dict[int, "AgentConsumer"] = {}
server_metrics.agent_connections.set_function(lambda: len(current))


def bearer_token(scope: dict) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


class AgentConsumer(EventLoopDispatch, AsyncWebsocketConsumer):
    """One node agent's connection."""

    channel_layer_alias = None  # see the module docstring

    async def connect(self) -> None:
        token = bearer_token(self.scope)
        self.token_hash = hash_token(token)
        self.node = None
        self.welcome: Welcome | None = None
        self.link = Link(connection=uuid.uuid4().hex)
        self.acks: asyncio.Queue = asyncio.Queue(maxsize=IN_FLIGHT)
        self.ack_task: asyncio.Task | None = None
        self.ignored_types: set[str] = set()
        self.stopped = False
        if (wait := cooling_down(self.token_hash)) is not None:
            await self.refuse_while_cooling(wait)
            return
        self.node = await database_sync_to_async(node_for_token)(token)
        await self.accept()
        if self.node is None:
            await self.close(CLOSE_BAD_TOKEN, "missing or unknown node token")
            return
        self.limit = limit_for(
            self.node.pk, settings.AGENT_MAX_FRAMES_PER_S, settings.AGENT_MAX_BYTES_PER_S, settings.AGENT_LIMIT_BURST_S
        )

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.node is None or self.stopped:
            return
        size = len(text_data) if text_data is not None else len(bytes_data or b"")
        if (why := self.limit.over(size)) is not None:
            self.limit.overdraw(size)
            await self.too_fast(why)
            return
        try:
            if self.welcome is not None:
                plain = plain_samples(text_data, self.welcome.gpus.keys(), time.time(), settings.AGENT_MAX_FRAME_BYTES)
                if plain is not None:
                    await self.take_samples(plain)
                    return
            frame = parse(text_data, bytes_data, settings.AGENT_MAX_FRAME_BYTES)
            if self.welcome is None:
                await self.on_first_frame(frame)
            elif frame.get("type") == "samples":
                await self.on_samples(frame, storable_json(text_data))
            elif frame.get("type") == "hello":
                raise FrameError("unexpected_hello", "hello was already received on this connection")
            elif not isinstance(frame.get("type"), str):
                raise FrameError("bad_payload", "type: a frame type is required")
            else:
                self.ignore_type(frame["type"])
        except ForeignGPU as error:
            await database_sync_to_async(record_foreign_gpus)(self.node.pk, error.uuids)
            await self.refuse(error)
        except FrameError as error:
            await self.refuse(error)
        except Exception:
            # A fault of ours, met on this sender's frame: it alone hears of it, and the server keeps going.
            log.exception("could not handle a frame from %s", self.node.hostname)
            await self.refuse(FrameError("server_error", "the server could not handle this frame"))

    async def refuse_while_cooling(self, wait: float) -> None:
        """A node closed for its rate reconnects before its cool-down ends: HTTP 429 with Retry-After, before the
        websocket is set up (a flood reconnects dozens of times a second; a handshake, a frame and a close each
        cost the server several times this). Without the denial-response extension: accepted, told, closed."""
        detail = f"over this node's limits; wait {wait:.1f} s"
        retry_after = str(max(1, math.ceil(wait))).encode()
        if await deny_handshake(self, 429, f"rate_limited: {detail}\n", [(b"retry-after", retry_after)]):
            return
        await self.accept()
        await self.send_json({"type": "error", "code": "rate_limited", "detail": detail})
        await self.close(CLOSE_TOO_FAST, "rate limited")

    async def too_fast(self, why: str) -> None:
        """Refused unread (reading is what a flood costs); closed, so the agent replays what was not acked."""
        self.stopped = True  # read nothing more from this connection
        cool_down(self.token_hash, self.node.pk)
        log.warning("agent of %s sends %s; closing", self.node.hostname, why)
        await self.send_json({"type": "error", "code": "rate_limited", "detail": f"this connection sent {why}"})
        await self.close(CLOSE_TOO_FAST, "rate limited")

    async def refuse(self, error: FrameError) -> None:
        await self.send_json(error.frame())
        if error.close_code is not None:
            await self.close(error.close_code, error.code)
        elif self.welcome is None:
            await self.close(CLOSE_PROTOCOL_VIOLATION, f"hello required first ({error.code})")

    def ignore_type(self, kind: str) -> None:
        """Frame types of newer agents are ignored (protocol v1), and said once per connection."""
        if kind not in self.ignored_types:
            self.ignored_types.add(kind)
            log.info("ignoring %.40r frames from %s (not part of protocol 1)", kind, self.node.hostname)

    async def on_first_frame(self, frame: dict) -> None:
        if frame.get("type") != "hello":
            raise FrameError("no_hello", f"the first frame must be a hello, not {str(frame.get('type'))[:40]!r}")
        hello = check_hello(frame)
        self.welcome = await database_sync_to_async(accept_hello)(self.node.pk, hello, self.link.connection)
        self.hello = hello
        await self.take_over_node()
        start_sweeper(lambda: bool(current))
        self.ack_task = asyncio.get_running_loop().create_task(self.send_acks())
        await self.send_json(
            {
                "type": "welcome",
                "node": self.node.hostname,
                "interval_s": settings.AGENT_INTERVAL_S,
                "resume_seq": self.welcome.resume_seq,
            }
        )
        log.info("agent of %s connected, resuming after seq %d", self.node.hostname, self.welcome.resume_seq)
        if self.welcome.came_online:
            await publish.node_status(self.node.hostname, "online")

    async def take_over_node(self) -> None:
        """Become this node's connection in this process, closing an older one."""
        older = current.get(self.node.pk)
        current[self.node.pk] = self
        if older is not None and older is not self:
            try:
                await older.close_as_replaced()
            except Exception:  # an older connection that already died has nothing left to close
                log.warning("the older connection of %s was already gone", self.node.hostname, exc_info=True)

    async def close_as_replaced(self) -> None:
        log.info("a newer connection of %s replaces this one", self.node.hostname)
        await self.close(CLOSE_REPLACED, "replaced by a newer connection of this node")

    async def on_samples(self, frame: dict, texts_storable: bool) -> None:
        await self.take_samples(check_samples(frame, self.welcome.gpus.keys(), time.time(), texts_storable))

    async def take_samples(self, checked: SamplesFrame) -> None:
        samples = [(self.welcome.gpus[sample.uuid], sample) for sample in checked.samples]
        # A frame whose every sample was refused still goes through, empty: its seq is settled for resume_seq.
        item = Frame(self.node.pk, self.hello.session, self.hello.boot_id, checked.seq, samples, self.link)
        await self.acks.put((checked.seq, batcher().submit(item), checked.refused, bool(samples)))

    async def answer(self, seq: int, refused: FrameError | None, stored_some: bool) -> None:
        """After the commit: the ack when any sample was stored, then the error naming each refused sample."""
        if stored_some or refused is None:
            await self.send(text_data=f'{{"type":"ack","seq":{seq}}}')
        if refused is not None:
            await self.send_json(refused.frame())

    async def send_acks(self) -> None:
        try:
            await self.answer_in_order()
        except OSError:  # the agent is gone (uvicorn's ClientDisconnected): nobody is left to answer
            log.info("the connection of %s ended before its answers were sent", self.node.hostname)

    async def answer_in_order(self) -> None:
        while True:
            seq, stored, refused, stored_some = await self.acks.get()
            try:
                await stored
            except StoreError as error:
                if not error.permanent:
                    await self.close(CLOSE_NOT_STORED, "telemetry could not be stored; reconnect and replay")
                    return
                await self.send_json({"type": "error", "code": "not_stored", "detail": str(error), "seq": seq})
                continue
            await self.answer(seq, refused, stored_some)
            if self.link.replaced:
                await self.close_as_replaced()
                return

    async def send_json(self, content: dict) -> None:
        await self.send(text_data=json.dumps(content))

    async def disconnect(self, code: int) -> None:
        # A message refused unread still counts as a whole frame.
        if code == CLOSE_TOO_BIG and self.node is not None and self.limit.over(settings.AGENT_MAX_FRAME_BYTES):
            self.limit.overdraw(settings.AGENT_MAX_FRAME_BYTES)
            cool_down(self.token_hash, self.node.pk)
        if self.ack_task is not None:
            self.ack_task.cancel()
        if self.node is not None and current.get(self.node.pk) is self:
            del current[self.node.pk]
