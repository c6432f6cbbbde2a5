"""What a web server does with an agent message one byte over AGENT_MAX_FRAME_BYTES, through a real client."""

import asyncio
import json
import struct

from django.conf import settings
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.http11 import Response

from tests.monitoring.ingest.agents import hello


async def welcomed(url: str, token: str, hostname: str):
    ws = await connect(url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=30, max_size=None)
    await ws.send(json.dumps(hello(hostname, gpus=1)))
    welcome = json.loads(await asyncio.wait_for(ws.recv(), 30))
    assert welcome["type"] == "welcome", welcome
    return ws


async def oversize_refusal(
    port: int, token: str, hostname: str, answer_the_close: bool = True
) -> tuple[list[str], int | None]:
    """(the extensions the server took of the client's offer, the close code it sent) after an oversize message.

    Only the header of a text frame one byte over the limit is sent, and a little of its payload: a server
    with the shipped options refuses it from the header (1009), without waiting for (or reading) the rest.
    answer_the_close=False drops the connection instead of reading the server's close, as a flood does.
    """
    ws = await welcomed(f"ws://127.0.0.1:{port}/ws/agent/", token, hostname)
    negotiated = [extension.name for extension in ws.protocol.extensions]
    length = settings.AGENT_MAX_FRAME_BYTES + 1
    ws.transport.write(b"\x81\xff" + struct.pack("!Q", length) + b"\x00" * 4 + b"x" * 16)
    if not answer_the_close:
        await asyncio.sleep(0.05)
        ws.transport.abort()
        return negotiated, None
    try:
        await asyncio.wait_for(ws.recv(), 30)
    except ConnectionClosed as closed:
        return negotiated, closed.rcvd.code if closed.rcvd else None
    finally:
        await ws.close()
    raise AssertionError("the server answered an oversize message instead of closing")


async def cooled_down(port: int, token: str, hostname: str, answer_the_close: bool = True) -> tuple[int, Response]:
    """(how many oversize messages it took, the refusal) once the node is refused at the handshake.

    Each oversize message is charged in full against the node's bytes a second; once its allowance is spent
    the server refuses the node's next connection before accepting it (HTTP 429 with Retry-After).
    """
    for attempt in range(1, 60):
        try:
            await oversize_refusal(port, token, hostname, answer_the_close=answer_the_close)
        except InvalidStatus as refused:
            return attempt, refused.response
    raise AssertionError("never cooled down")
