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
# Django's WSGI handler on a fixed pool of threads makes one, so a booking through the API costs the web server
# less CPU this way (docs/benchmarks.md#reservations).
application = ProtocolTypeRouter(
    {
        "http": WSGIMiddleware(get_wsgi_application(), workers=settings.WEB_THREADS),
        "websocket": websocket_application(),
    }
)

# What start-up built (Django, DRF, the app) lives as long as the process, yet every full collection walked
# all of it, stalling every request of the process under the reservations benchmark's API load. Frozen, the
# collector leaves it alone (docs/benchmarks.md#reservations).
gc.freeze()

# The ingest allocates a few objects per sample that live for one flush (tens of milliseconds). With the
# default thresholds (700, 10, 10) the collector ran constantly and promoted those in-flight objects into
# older generations, whose passes then took a large share of the event loop's CPU. A young generation of
# 50,000 objects lets them die first, and a full pass waits for 100 middle ones: more samples/s for less
# server CPU per sample (docs/benchmarks.md#the-wider-sample-dcgm-depth-fields-issue-18).
GC_THRESHOLDS = (50_000, 20, 100)
gc.set_threshold(*GC_THRESHOLDS)
