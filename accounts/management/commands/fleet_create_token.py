"""`manage.py fleet_create_token USER --name NAME`: a user's API token for scripts, printed once."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.tokens import MAX_EXPIRY_DAYS, issue


class Command(BaseCommand):
    help = "Make a named API token for a user and print its key (shown once; only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="made with manage.py")
        parser.add_argument("--expires-days", type=int, default=None, help="Default: never expires.")

    def handle(self, username, name, expires_days, **options):
        if expires_days is not None and not 1 <= expires_days <= MAX_EXPIRY_DAYS:
            raise CommandError(f"--expires-days must be between 1 and {MAX_EXPIRY_DAYS}.")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        token, key = issue(user, name[:100], expires_days)
        self.stdout.write(f"API token {token.name!r} for {username} (shown once):")
        self.stdout.write(key)
