"""`manage.py fleet_rotate_token HOSTNAME`: a node's new agent token, printed once."""

from django.core.management.base import BaseCommand, CommandError

from inventory.nodes import NodeError, rotate_token


class Command(BaseCommand):
    help = "Issue a new agent token for a node; the old one stops working at once."

    def add_arguments(self, parser):
        parser.add_argument("hostname")

    def handle(self, hostname, **options):
        try:
            token = rotate_token(hostname)
        except NodeError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"New agent token for {hostname} (shown once, the old one no longer works):")
        self.stdout.write(token)
