"""The web server: uvicorn on fleet.asgi with the websocket options from the settings, for every way we serve.

    python -m fleet.serving [uvicorn's options: --host, --port, --workers, --reload, ...]

The demo (fleet/demo/processes.py), `manage.py runserver` (fleet/management/commands/runserver.py), the
tests and the benchmarks all start the server through here; deploy/systemd/gpu-fleet-web.service spells
the same options out (a test compares them). The settings are read by the process that serves, from its
own environment, so a launcher need not load them.

A message longer than an agent frame may be (AGENT_MAX_FRAME_BYTES) is refused by the websocket layer
from its header, unread (close 1009). Per-message deflate is off: a client can send a megabyte that
compresses to a kilobyte, and one 256 KiB read may hold hundreds of them, which the server inflated
before any limit of ours could see a frame (a flooding node held every other node's acks for seconds;
docs/benchmarks.md, "Blast radius").
"""

import os
import sys

APPLICATION = "fleet.asgi:application"


def uvicorn_websocket_options() -> list[str]:
    from django.conf import settings

    return ["--ws-max-size", str(settings.AGENT_MAX_FRAME_BYTES), "--ws-per-message-deflate", "false"]


def command(*options: str) -> list[str]:
    """The command line that serves the app as production does, with more of uvicorn's options."""
    return [sys.executable, "-m", "fleet.serving", *options]


def serve(options: list[str]) -> None:
    """uvicorn in this process; the websocket options come first, so one given in options overrides them."""
    import uvicorn.main

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")
    uvicorn.main.main(args=[APPLICATION, *uvicorn_websocket_options(), *options], prog_name="python -m fleet.serving")


if __name__ == "__main__":
    serve(sys.argv[1:])
