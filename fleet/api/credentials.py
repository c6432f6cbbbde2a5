"""The words an API caller authenticates with, shared by the token check (accounts/authentication.py), the
websockets and the 401 answers that say how to authenticate."""

SCHEMES = ("Bearer", "Token")
HOW_TO_AUTHENTICATE = "Send `Authorization: Bearer <token>` (or `Token <token>`), or log in."
