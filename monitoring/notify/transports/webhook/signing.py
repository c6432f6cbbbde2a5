"""Webhook signatures, the Standard Webhooks scheme (standardwebhooks.com):

    webhook-id: msg_<notification id>          (the same on every retry of one message)
    webhook-timestamp: <UNIX seconds>           (when this attempt was signed)
    webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">

A receiver recomputes the signature with the webhook's secret and refuses a timestamp more than five
minutes from its clock, so a captured delivery cannot be replayed later (docs/alerts.md has the code).
The key is the base64 part of a `whsec_…` secret, or the UTF-8 bytes of a secret made before that form.
"""

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def key_of(secret: str) -> bytes:
    if secret.startswith(SECRET_PREFIX):
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    return secret.encode()


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key_of(secret), signed, hashlib.sha256).digest()).decode()


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, message_id, timestamp, body),
    }
