"""The web server's websocket layer refuses what our limits would refuse, before it costs anything.

Through the real uvicorn (tests/conftest.py asgi_server, started with fleet/serving.py's options); the
other ways we serve (manage.py runserver, the demo) are tested alike in tests/fleet/test_serving.py.
"""

import asyncio

import pytest

from fleet.nodes import add_node
from tests.support.websocket_limits import oversize_refusal

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_message_over_the_frame_limit_is_refused_unread_with_1009_and_nothing_is_compressed(asgi_server):
    _, token = add_node("gpu-oversize")

    negotiated, code = asyncio.run(oversize_refusal(asgi_server.port, token, "gpu-oversize"))

    assert negotiated == []  # the client offered permessage-deflate; the server declined it
    assert code == 1009
