"""`manage.py runserver`: the development server is the production one (fleet/serving.py), reloading on change.

Django's own (and staticfiles') runserver would serve websockets without the web server's limits, or not
at all; "fleet" stands first in INSTALLED_APPS so this one is found first.
"""

import re

from django.core.management.base import BaseCommand, CommandError

from fleet.serving import serve

ADDRESS = re.compile(r"(?:\[?(?P<host>[^\[\]]*?)\]?:)?(?P<port>[0-9]{1,5})")


class Command(BaseCommand):
    help = "Serve the app as production does (uvicorn with fleet/serving.py's websocket limits), reloading on change."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="[host:]port (127.0.0.1:8000)")
        parser.add_argument("--noreload", action="store_false", dest="reload", help="do not restart on code changes")

    def handle(self, addrport, reload, **options):
        address = ADDRESS.fullmatch(addrport)
        if address is None:
            raise CommandError(f"{addrport!r} is not [host:]port")
        host = address["host"] or "127.0.0.1"
        serve(["--host", host, "--port", address["port"], *(["--reload"] if reload else [])])
