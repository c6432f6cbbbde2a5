"""Issuing, checking and revoking API tokens (the key is shown once; only its hash is stored)."""

from datetime import datetime, timedelta

from django.utils import timezone

from accounts.models import ApiToken
from inventory.node_tokens import hash_token, new_token

KEY_PREFIX = "gft_"  # tells a GPU Fleet API key apart in logs and secret scanners
PREFIX_CHARS = 10  # shown on the tokens page: "gft_" and six characters of the key
LAST_USED_EVERY = timedelta(minutes=1)  # last_used_at is written at most this often per token

# Offered lifetimes, in days (None: never expires). The API takes any whole number of days up to the largest.
EXPIRY_CHOICES = [(30, "30 days"), (90, "90 days"), (365, "1 year"), (None, "Never")]
MAX_EXPIRY_DAYS = 3650


def issue(user, name: str, expires_in_days: int | None = None) -> tuple[ApiToken, str]:
    """A new token of `user` and its key, which is not stored and cannot be read again."""
    key = KEY_PREFIX + new_token()
    now = timezone.now()
    expires_at = now + timedelta(days=expires_in_days) if expires_in_days else None
    token = ApiToken.objects.create(
        user=user, name=name, key_hash=hash_token(key), prefix=key[:PREFIX_CHARS], created=now, expires_at=expires_at
    )
    return token, key


def refusal(token: ApiToken, now: datetime) -> str | None:
    """Why this token no longer opens the API, or None while it does."""
    state = token.state(now)
    if state == "revoked":
        return "Token revoked."
    if state == "expired":
        return "Token expired."
    if not token.user.is_active:
        return "User inactive or deleted."
    return None


def note_use(token: ApiToken, now: datetime) -> None:
    """Record the token's use, at most once a minute so a busy client does not write on every request."""
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def revoke(token: ApiToken) -> bool:
    """Revoke a token; False when it was already revoked."""
    now = timezone.now()
    done = ApiToken.objects.filter(pk=token.pk, revoked_at=None).update(revoked_at=now) == 1
    if done:
        token.revoked_at = now
    return done
