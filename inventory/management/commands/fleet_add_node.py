"""`manage.py fleet_add_node HOSTNAME`: register a node and print its agent token once."""

from django.core.management.base import BaseCommand, CommandError

from inventory.nodes import NodeError, add_node


class Command(BaseCommand):
    help = "Register a GPU node and print its agent token once (only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("hostname")

    def handle(self, hostname, **options):
        try:
            node, token = add_node(hostname)
        except NodeError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Node {node.hostname} added. Its agent token (shown once, keep it secret):")
        self.stdout.write(token)
