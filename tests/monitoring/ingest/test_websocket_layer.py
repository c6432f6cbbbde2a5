"""The web server's websocket layer refuses what our limits would refuse, before it costs anything.

Through the real uvicorn (tests/conftest.py asgi_server, started with fleet/serving.py's options).
"""

import asyncio
import json
import struct

import pytest
from django.conf import settings
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from fleet.nodes import add_node
from tests.monitoring.ingest.agents import hello

pytestmark = pytest.mark.django_db(transaction=True)


async def welcomed(url: str, token: str, hostname: str):
    ws = await connect(url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=30, max_size=None)
    await ws.send(json.dumps(hello(hostname, gpus=1)))
    welcome = json.loads(await asyncio.wait_for(ws.recv(), 30))
    assert welcome["type"] == "welcome", welcome
    return ws


def test_a_message_over_the_frame_limit_is_refused_unread_with_1009_and_nothing_is_compressed(asgi_server):
    _, token = add_node("gpu-oversize")
    url = f"ws://127.0.0.1:{asgi_server.port}/ws/agent/"

    async def send_oversize():
        ws = await welcomed(url, token, "gpu-oversize")
        negotiated = [extension.name for extension in ws.protocol.extensions]
        # Only the header of a text frame one byte over the limit, and a little of its payload: the server must
        # refuse it from the header, without waiting for (or reading) the rest.
        length = settings.AGENT_MAX_FRAME_BYTES + 1
        ws.transport.write(b"\x81\xff" + struct.pack("!Q", length) + b"\x00" * 4 + b"x" * 16)
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 30)
        return negotiated, closed.value.rcvd.code

    negotiated, code = asyncio.run(send_oversize())

    assert negotiated == []  # the client offered permessage-deflate; the server declined it
    assert code == 1009
