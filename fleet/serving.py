"""The web server: uvicorn on fleet.asgi with the websocket options from the settings, for every way we serve.

    python -m fleet.serving [uvicorn's options: --host, --port, --workers, --reload, ...]

Every server the product starts goes through here: the unit (deploy/systemd/gpu-fleet-web.service runs
`python -m fleet.serving` and spells none of the websocket options out, which a test checks), the demo, the
tests and the benchmarks (`local_command`), and `manage.py runserver` (fleet/management/commands/runserver.py
calls serve). The settings are read by the process that serves, from its own environment, so a launcher need
not load them.

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


def local_command(port: int, *options: str) -> list[str]:
    """The command line that serves on 127.0.0.1:port with no access log (the demo, the tests and the benchmarks),
    with more of uvicorn's options."""
    return command("--host", "127.0.0.1", "--port", str(port), "--no-access-log", *options)


def serve(options: list[str]) -> None:
    """uvicorn in this process; the websocket options come first, so one given in options overrides them."""
    import uvicorn.main

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")
    uvicorn.main.main(args=[APPLICATION, *uvicorn_websocket_options(), *options], prog_name="python -m fleet.serving")


if __name__ == "__main__":
    serve(sys.argv[1:])
