"""Agent tokens: shown once, stored only as a SHA-256 hash (they are long random strings, so no slow hash is needed)."""

import hashlib
import secrets

TOKEN_BYTES = 32


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
