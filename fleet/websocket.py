"""What every websocket consumer of the product shares."""

from channels.consumer import get_handler_name


class EventLoopDispatch:
    """Dispatch each message on the event loop, without Channels' hop to its database thread.

    Channels' own dispatch first closes stale database connections on its single database thread,
    the thread that synchronous page views run on too: a slow view (or a slow database write) would
    then hold back every live message behind it. Our consumers never touch the ORM on the event
    loop; their ORM calls go through database_sync_to_async, which recycles connections itself.
    """

    async def dispatch(self, message: dict) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']}")
        await handler(message)
