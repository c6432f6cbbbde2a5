"""Which launch variables hold secrets: their values are never shown, logged or kept after the run ends.

One definition for the API, the pages, the node worker's log and the run's record.
"""

from __future__ import annotations

import re

SECRET_MASK = "••••••"
# A name that contains one of these words (any case) looks secret: HF_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD.
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
_SECRET = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)


def looks_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


def shown(variables: dict[str, str]) -> dict[str, str]:
    """The variables as anyone may see them: secret-looking values replaced by SECRET_MASK."""
    return {name: SECRET_MASK if looks_secret(name) else value for name, value in variables.items()}


def secret_values(variables: dict[str, str]) -> list[str]:
    """The values of secret-looking variables, longest first (so no part of one is left showing)."""
    return sorted({value for name, value in variables.items() if looks_secret(name) and value}, key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every one of the ``secrets`` (values) replaced by SECRET_MASK."""
    for value in secrets:
        text = text.replace(value, SECRET_MASK)
    return text
