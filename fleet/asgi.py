"""ASGI entry point: HTTP through Django, websockets for agents and browsers through Channels."""

import os

from fleet.startup import setup_django

os.environ.setdefault("DB_POOL", "1")  # see DATABASES in fleet/settings.py
setup_django()

from channels.routing import ProtocolTypeRouter  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

from fleet.routing import websocket_application  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": get_asgi_application(),
        "websocket": websocket_application(),
    }
)
