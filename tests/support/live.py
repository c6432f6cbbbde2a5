"""Publishing live updates from a test process, as the ingest does after a commit (through Redis to the server)."""

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def publish(gpu_updates: list[dict] = (), node_statuses: dict[str, str] | None = None) -> None:
    """Send one coalesced live message now, from a thread of its own (Playwright's loop owns the test's thread)."""
    from channels.db import database_sync_to_async
    from django.db import connections

    from monitoring.live.fanout import coalescer

    async def send() -> None:
        pending = coalescer()
        pending.gpus.update({update["uuid"]: update for update in gpu_updates})
        pending.nodes.update(node_statuses or {})
        await pending.send_pending()
        # The owners lookup opened a connection in the ORM's worker thread; the test database is dropped later.
        await database_sync_to_async(connections.close_all)()

    errors = []
    thread = threading.Thread(target=lambda: errors.extend(run(send)))
    thread.start()
    thread.join(timeout=30)
    if errors:
        raise errors[0]


def run(coroutine_function) -> list[BaseException]:
    try:
        asyncio.run(coroutine_function())
    except BaseException as error:  # handed to the test's thread
        return [error]
    return []


class AgentSocket:
    """A node agent speaking protocol v1 to a real server over a real websocket (websockets' sync client)."""

    def __init__(self, ws):
        self.ws = ws

    def send(self, frame: dict) -> dict:
        """Send a frame and return the server's answer (welcome, ack or error)."""
        self.ws.send(json.dumps(frame))
        return json.loads(self.ws.recv(timeout=15))


@contextmanager
def agent_socket(server_url: str, token: str) -> Iterator[AgentSocket]:
    from websockets.sync.client import connect

    url = server_url.replace("http://", "ws://") + "/ws/agent/"
    with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=10) as ws:
        yield AgentSocket(ws)
