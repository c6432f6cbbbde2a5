"""API tokens: a user's named keys for the JSON API, stored only as hashes."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    """One named API key of a user; the key itself is shown once and only its SHA-256 hash is kept."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12, help_text="The key's first characters, to tell keys apart.")
    created = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never expires.")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "fleet_apitoken"  # made when tokens lived in the inventory app
        ordering = ["-created"]
        indexes = [models.Index(fields=["user", "-created"], name="apitoken_user_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"

    def state(self, now=None) -> str:
        """ "active", "expired" or "revoked"."""
        now = now or timezone.now()
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"
