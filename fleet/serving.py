"""The web server's websocket options, from the settings: one definition for the unit, the tests and the benchmarks.

A message longer than an agent frame may be (AGENT_MAX_FRAME_BYTES) is refused by the websocket layer
from its header, unread (close 1009). Per-message deflate is off: a client can send a megabyte that
compresses to a kilobyte, and one 256 KiB read may hold hundreds of them, which the server inflated
before any limit of ours could see a frame (a flooding node held every other node's acks for seconds;
docs/benchmarks.md, "Blast radius"). deploy/systemd/gpu-fleet-web.service spells the same options out.
"""

from django.conf import settings


def uvicorn_websocket_options() -> list[str]:
    return ["--ws-max-size", str(settings.AGENT_MAX_FRAME_BYTES), "--ws-per-message-deflate", "false"]
