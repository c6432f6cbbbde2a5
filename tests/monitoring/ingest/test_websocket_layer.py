"""The web server's websocket layer refuses what our limits would refuse, before it costs anything.

Through the real uvicorn (tests/conftest.py asgi_server, started with fleet/serving.py's options); the
other ways we serve (manage.py runserver, the demo) are tested alike in tests/fleet/test_serving.py.
"""

import asyncio

import pytest
from django.conf import settings

from inventory.nodes import add_node
from tests.support.websocket_limits import cooled_down, oversize_refusal

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_message_over_the_frame_limit_is_refused_unread_with_1009_and_nothing_is_compressed(asgi_server):
    _, token = add_node("gpu-oversize")

    negotiated, code = asyncio.run(oversize_refusal(asgi_server.port, token, "gpu-oversize"))

    assert negotiated == []  # the client offered permessage-deflate; the server declined it
    assert code == 1009


@pytest.mark.parametrize("answers_the_close", [True, False], ids=["closes cleanly", "drops the connection"])
def test_a_node_that_keeps_sending_oversize_messages_is_cooled_down_however_it_leaves(asgi_server, answers_the_close):
    """Each refused message counts as a whole frame against the node's bytes a second; a sender that drops the
    connection without answering the close (as a flood does) is counted too, or its reconnects would be free."""
    hostname = f"gpu-oversize-{int(answers_the_close)}"
    _, token = add_node(hostname)

    attempts, refusal = asyncio.run(cooled_down(asgi_server.port, token, hostname, answer_the_close=answers_the_close))

    burst = settings.AGENT_MAX_BYTES_PER_S * settings.AGENT_LIMIT_BURST_S
    assert attempts <= burst // settings.AGENT_MAX_FRAME_BYTES + 2
    assert refusal.status_code == 429
