"""The browser websockets (`/ws/runs/…`, `/ws/live/`, `/ws/sweeps/…`, `/ws/notifications/`) opened by a
script with an API token instead of a session: `Authorization: Bearer <key>` (or `Token <key>`) on the
handshake, or, where a client cannot set headers, the subprotocols `fleet.bearer, <key>`. Never a query
string, which proxies and access logs keep.

A token is not sent by a browser on its own, so a socket opened with one skips the session's Origin check;
a wrong one is refused at the handshake (401 with the reason, or close 4401 where the server cannot answer
HTTP there).
"""

from channels.db import database_sync_to_async
from rest_framework.exceptions import AuthenticationFailed

from accounts.authentication import key_in, user_of_key
from fleet.api.credentials import HOW_TO_AUTHENTICATE, SCHEMES

SUBPROTOCOL = "fleet.bearer"
CLOSE_NOT_AUTHENTICATED = 4401


def key_of(scope: dict) -> str | None:
    """The token a handshake carries; None when it carries none; AuthenticationFailed when it is malformed."""
    header = dict(scope.get("headers", [])).get(b"authorization", b"").decode("latin-1")
    if header.strip():
        return key_in(header)
    offered = list(scope.get("subprotocols") or [])
    if SUBPROTOCOL not in offered:
        return None
    after = offered[offered.index(SUBPROTOCOL) + 1 : offered.index(SUBPROTOCOL) + 2]
    if not after:
        raise AuthenticationFailed(f"Give the token after the {SUBPROTOCOL} subprotocol. {HOW_TO_AUTHENTICATE}")
    return after[0]


@database_sync_to_async
def user_of(key: str):
    return user_of_key(key)[0]


async def refuse(scope, receive, send, detail: str) -> None:
    await receive()  # websocket.connect
    if "websocket.http.response" in (scope.get("extensions") or {}):
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"www-authenticate", ", ".join(SCHEMES).encode())]
        await send({"type": "websocket.http.response.start", "status": 401, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": detail.encode()})
    else:
        await send({"type": "websocket.close", "code": CLOSE_NOT_AUTHENTICATED})


class TokenOrSession:
    """ASGI middleware: a handshake with a token goes to `tokens` with its user in the scope; any other to
    `sessions` (the session and Origin checks)."""

    def __init__(self, tokens, sessions):
        self.tokens = tokens
        self.sessions = sessions

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            return await self.sessions(scope, receive, send)
        try:
            key = key_of(scope)
            if key is None:
                return await self.sessions(scope, receive, send)
            user = await user_of(key)
        except AuthenticationFailed as refused:
            return await refuse(scope, receive, send, str(refused.detail))
        return await self.tokens({**scope, "user": user}, receive, accepting_subprotocol(scope, send))


def accepting_subprotocol(scope: dict, send):
    """A client that offered `fleet.bearer` must get it back in the accept, or it drops the socket."""
    if SUBPROTOCOL not in (scope.get("subprotocols") or []):
        return send

    async def send_with_subprotocol(message: dict) -> None:
        if message["type"] == "websocket.accept":
            message = {**message, "subprotocol": SUBPROTOCOL}
        await send(message)

    return send_with_subprotocol
