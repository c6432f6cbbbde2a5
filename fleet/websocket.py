"""What every websocket consumer of the product shares."""

from channels.consumer import get_handler_name

from wire.jsontext import JsonTextError, loads


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


class JsonTextFrames:
    """Answer a frame that is not a JSON text message (or is nested too deep) with an error frame; stay open."""

    max_text_chars: int | None = None
    not_text_error = "Send JSON text frames."
    not_json_error = "That was not JSON."

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs) -> None:
        if text_data is None or (self.max_text_chars is not None and len(text_data) > self.max_text_chars):
            await self.send_error(self.not_text_error)
            return
        try:
            content = loads(text_data)
        except JsonTextError as exc:
            await self.send_error(
                self.not_json_error if exc.code == "not_json" else f"That was not taken: {exc.detail}."
            )
            return
        await self.receive_json(content)

    async def send_error(self, detail: str) -> None:
        await self.send_json({"type": "error", "detail": detail})


async def deny_handshake(consumer, status: int, body: str, headers: list[tuple[bytes, bytes]] = ()) -> bool:
    """Answer the websocket's opening request with a plain HTTP response instead of accepting it.

    Uses the ASGI websocket denial-response extension (uvicorn has it): no websocket is set up, no frame is
    sent, and the client sees the status, the headers and the body. False, having sent nothing, when the server
    does not offer the extension; the caller then refuses another way.
    """
    if "websocket.http.response" not in (consumer.scope.get("extensions") or {}):
        return False
    start_headers = [(b"content-type", b"text/plain; charset=utf-8"), *headers]
    await consumer.base_send({"type": "websocket.http.response.start", "status": status, "headers": start_headers})
    await consumer.base_send({"type": "websocket.http.response.body", "body": body.encode()})
    return True
