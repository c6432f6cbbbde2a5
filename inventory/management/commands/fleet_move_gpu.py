"""`manage.py fleet_move_gpu UUID HOSTNAME`: an admin gives a GPU to another node, leaving a security event."""

import getpass

from django.core.management.base import BaseCommand, CommandError

from monitoring.ingest.ownership import MoveError, move_gpu


class Command(BaseCommand):
    help = "Move a GPU (by UUID) to another node, whose agent may then report it; recorded as a security event."

    def add_arguments(self, parser):
        parser.add_argument("uuid")
        parser.add_argument("hostname")

    def handle(self, uuid, hostname, **options):
        try:
            gpu = move_gpu(uuid, hostname, by=getpass.getuser())
        except MoveError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"GPU {uuid} now belongs to {hostname} (index {gpu.index} until its agent says hello).")
