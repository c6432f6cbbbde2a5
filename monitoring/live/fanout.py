"""Live fan-out to browsers: the ingest publishes here after each commit; pages get a few messages a second.

Each server process keeps the latest update per GPU and node in a Coalescer and sends them as ONE
channel-layer message to the fleet group per tick (LIVE_TICK_S, 250 ms by default). Coalescing where
samples arrive, rather than in every browser consumer, keeps the channel layer's work per tick and per
page instead of per frame and per page: 125 nodes at 1 Hz make 125 frames a second, but each page still
gets 4 messages a second. The first update after a quiet spell is sent at once; later ones wait at most
one tick. Owners of processes come from a short-lived cache, so a tick asks the database nothing unless
a new OS user shows up.
"""

import asyncio
import json
import logging
import time
import weakref
from collections.abc import Iterable

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction

from monitoring.agent.metrics import NVLINK
from monitoring.live.serializers import GPUStateSerializer, NodeStatusSerializer
from monitoring.live.state import owner_keys
from training.owners import owner_usernames
from wire.jsontext import dumps

log = logging.getLogger(__name__)

UPDATE = "telemetry.update"


def live_group(scope: str = "fleet") -> str:
    """The channel-layer group browsers on /ws/live/ join; every live message goes to it."""
    return f"live.{scope}"


class OwnerCache:
    """Owner key (a run, else an OS username; processes/owners.py) → researcher's username or None, kept a while."""

    def __init__(self, ttl_s: float):
        self.ttl_s = ttl_s
        self.entries: dict[str, tuple[float, str | None]] = {}

    async def lookup(self, usernames: set[str]) -> dict[str, str]:
        now = time.monotonic()
        missing = {name for name in usernames if self.entries.get(name, (0.0, None))[0] <= now}
        if missing:
            found = await database_sync_to_async(self._fetch)(missing)
            for name in missing:
                self.entries[name] = (now + self.ttl_s, found.get(name))
        return {name: self.entries[name][1] for name in usernames if self.entries[name][1]}

    @staticmethod
    def _fetch(usernames: set[str]) -> dict[str, str]:
        return owner_usernames(usernames)


class Coalescer:
    """The latest update per GPU and node status of one process, sent as one group message per tick."""

    def __init__(self, tick_s: float, owners: OwnerCache):
        self.tick_s = tick_s
        self.owners = owners
        self.gpus: dict[str, object] = {}
        self.links: dict[str, object] = {}  # the latest pending update of each GPU that carried per-link figures
        self.nodes: dict[str, str] = {}
        self.last_sent = float("-inf")
        self.sender: asyncio.Task | None = None
        self.sent: asyncio.Future | None = None  # resolved when what is pending now has been sent

    def add_gpus(self, updates: Iterable) -> None:
        """Keep the latest update of each GPU: a live state's dict, or the ingest's MovedGPU, which is made into
        one only if it is still the latest when the tick sends it."""
        for update in updates:
            uuid = update["uuid"] if type(update) is dict else update.uuid
            if (NVLINK in update) if type(update) is dict else update.carries_links:
                # Per-link figures come in one sample of NVLINK_EVERY_S: newer updates without them keep them.
                self.links[uuid] = update
            self.gpus[uuid] = update
        self._wake()

    def add_node(self, hostname: str, status: str) -> asyncio.Future:
        """Returns a future resolved once the status is sent: a node flip is rare, and callers may be short-lived."""
        self.nodes[hostname] = status
        self._wake()
        if self.sent is None or self.sent.done():
            self.sent = asyncio.get_running_loop().create_future()
        return self.sent

    def _wake(self) -> None:
        if self.sender is None or self.sender.done():
            self.sender = asyncio.get_running_loop().create_task(self._send_while_pending())

    def _wait_s(self) -> float:
        return max(0.0, self.last_sent + self.tick_s - asyncio.get_running_loop().time())

    async def _send_while_pending(self) -> None:
        # Ends when nothing is pending; the next add starts a new sender.
        while self.gpus or self.nodes:
            await asyncio.sleep(self._wait_s())
            try:
                await self.send_pending()
            except Exception:
                log.exception("a live update could not be sent to browsers")

    async def send_pending(self) -> None:
        """Send what is pending now as one message (the ticker calls this; tests may too)."""
        self.last_sent = asyncio.get_running_loop().time()
        latest, links, self.gpus, self.links = self.gpus, self.links, {}, {}
        nodes, self.nodes = self.nodes, {}
        waiting, self.sent = self.sent, None
        try:
            if latest or nodes:
                # Making and serializing a thousand states takes tens of ms: off the loop the ingest shares.
                gpus = await asyncio.to_thread(live_states, latest, links) if latest else []
                owners = await self.owners.lookup(owner_keys(gpus))
                message = await asyncio.to_thread(update_message, gpus, nodes, owners)
                await get_channel_layer().group_send(live_group(), message)
        except Exception as error:
            if waiting is not None and not waiting.done():
                waiting.set_exception(error)
            raise
        if waiting is not None and not waiting.done():
            waiting.set_result(None)


def live_state(update) -> dict:
    return update if type(update) is dict else update.live_update()


def live_states(latest: dict[str, object], links: dict[str, object]) -> list[dict]:
    """Each GPU's latest update as a live state, with the per-link figures of an earlier one of the same tick."""
    states = []
    for uuid, update in latest.items():
        state = live_state(update)
        carrier = links.get(uuid)
        if carrier is not None and carrier is not update and NVLINK not in state:
            state = {**state, NVLINK: live_state(carrier)[NVLINK]}
        states.append(state)
    return states


def update_message(gpus: list[dict], nodes: dict[str, str], owners: dict[str, str]) -> dict:
    """One channel-layer message with the GPU states and node statuses, serialized as the API does.

    Each state travels as JSON text next to the keys consumers filter on, [uuid, hostname, json] and
    [hostname, json]: it is encoded once here instead of once per open page.
    """
    states = GPUStateSerializer(gpus, many=True, context={"owners": owners}).data
    node_records = [{"hostname": hostname, "status": status} for hostname, status in nodes.items()]
    statuses = NodeStatusSerializer(node_records, many=True).data
    return {
        "type": UPDATE,
        "gpus": [[state["uuid"], state["node"], dumps(state)] for state in states],
        "nodes": [[status["hostname"], dumps(status)] for status in statuses],
        "sent_at": time.time(),
    }


def update_text(gpus: list[list], nodes: list[list], sent_at: float) -> str:
    """The browser's update frame from pre-encoded entries of update_message: no JSON encoding per page."""
    gpu_texts = ",".join(entry[-1] for entry in gpus)
    node_texts = ",".join(entry[-1] for entry in nodes)
    return f'{{"type":"update","gpus":[{gpu_texts}],"nodes":[{node_texts}],"sent_at":{json.dumps(sent_at)}}}'


_coalescers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Coalescer]" = weakref.WeakKeyDictionary()


def coalescer() -> Coalescer:
    """This event loop's coalescer (one per server process; tests get a fresh one with each loop)."""
    loop = asyncio.get_running_loop()
    if loop not in _coalescers:
        _coalescers[loop] = Coalescer(settings.LIVE_TICK_S, OwnerCache(settings.LIVE_OWNER_CACHE_S))
    return _coalescers[loop]


async def apublish_gpu_updates(updates: list) -> None:
    """Hand committed GPU updates (the ingest's MovedGPU records, or live states as dicts) to the browsers.

    Returns at once; the sending happens on the next tick in this event loop, so call it from a
    long-lived loop (the server's). Awaiting each send would hold the caller a tick per batch.
    """
    coalescer().add_gpus(updates)


async def apublish_node_status(hostname: str, status: str) -> None:
    """Hand a node's new status (inventory.choices.NodeStatus) to the browsers; returns once it is sent (≤ 1 tick).

    Safe from short-lived loops too, e.g. a Celery task's async_to_sync(apublish_node_status)(...).
    """
    await coalescer().add_node(hostname, status)


def publish_node_status_on_commit(hostname: str, status: str) -> None:
    """For synchronous code that changes a node's status in a transaction: send once it commits."""
    transaction.on_commit(lambda: async_to_sync(apublish_node_status)(hostname, status))
