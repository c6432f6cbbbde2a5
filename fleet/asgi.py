"""ASGI entry point: HTTP through Django, websockets for agents and browsers through Channels."""

import gc
import os

from fleet.startup import setup_django

os.environ.setdefault("DB_POOL", "1")  # see DATABASES in fleet/settings.py
setup_django()

from a2wsgi import WSGIMiddleware  # noqa: E402
from channels.routing import ProtocolTypeRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

from fleet.routing import websocket_application  # noqa: E402

# Every page and API view is synchronous. Django's own ASGI handler hops between the event loop and the
# request's thread before and after each middleware and around the view, a dozen hops per request;
# Django's WSGI handler on a fixed pool of threads makes one. Measured on a booking through the API:
# 5.8–7.6 ms of web server CPU with the ASGI handler, 3.4–5.6 ms this way (docs/benchmarks.md).
application = ProtocolTypeRouter(
    {
        "http": WSGIMiddleware(get_wsgi_application(), workers=settings.WEB_THREADS),
        "websocket": websocket_application(),
    }
)

# What start-up built (Django, DRF, the app: about 120,000 objects) lives as long as the process, yet
# every full collection walked all of it, stalling every request of the process: 110–250 ms pauses
# under the reservations benchmark's API load. Frozen, the collector leaves it alone (docs/benchmarks.md).
gc.freeze()
