"""`manage.py fleet_demo_seed`: the demo's users, projects, nodes and bookings (fleet/demo/data.py)."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from fleet.demo.bookings import seed_bookings
from fleet.demo.data import seed_nodes, seed_users


class Command(BaseCommand):
    help = "Create the demo users, projects, nodes, GPUs and bookings; write logins and agent tokens under var/demo/."

    def add_arguments(self, parser):
        parser.add_argument("--dir", default=str(settings.BASE_DIR / "var" / "demo"))

    def handle(self, dir, **options):
        folder = Path(dir)
        logins = seed_users(folder / "logins.json")
        tokens = seed_nodes(folder / "agent-tokens.json")
        bookings = seed_bookings()
        self.stdout.write(
            f"Demo: {len(logins)} users, {len(tokens)} nodes, {bookings} new bookings; "
            f"logins in {folder / 'logins.json'}"
        )
