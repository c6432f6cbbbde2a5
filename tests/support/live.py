"""Publishing live updates from a test process, as the ingest does after a commit (through Redis to the server)."""

import asyncio
import threading


def publish(gpu_updates: list[dict] = (), node_statuses: dict[str, str] | None = None) -> None:
    """Send one coalesced live message now, from a thread of its own (Playwright's loop owns the test's thread)."""
    from channels.db import database_sync_to_async
    from django.db import connections

    from monitoring.live import coalescer

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
