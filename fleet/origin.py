"""The browser websockets' Origin check: scheme, host and port must be the page's own (or a trusted origin).

Channels' AllowedHostsOriginValidator compares the host name only, so a page served from another port
or scheme of an allowed host (another service on the same machine) could open a socket with the
user's cookies. Here the Origin must equal the origin the socket was opened on (ws → http, wss →
https, the Host header with its port), or be listed in CSRF_TRUSTED_ORIGINS; its host must still be
an allowed host.
"""

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_tuple(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.lower(), port or DEFAULT_PORTS[parts.scheme]


def own_origin(scope: dict) -> tuple[str, str, int] | None:
    headers = dict(scope.get("headers", []))
    host = headers.get(b"host", b"").decode("latin-1")
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        name, secure_value = proxy_header
        forwarded = headers.get(name.removeprefix("HTTP_").lower().replace("_", "-").encode("latin-1"))
        if forwarded is not None:
            scheme = "https" if forwarded.decode("latin-1").split(",")[0].strip() == secure_value else "http"
    return origin_tuple(f"{scheme}://{host}") if host else None


def allowed_origin(scope: dict) -> bool:
    headers = dict(scope.get("headers", []))
    origin = origin_tuple(headers.get(b"origin", b"").decode("latin-1"))
    if origin is None or not validate_host(origin[1], settings.ALLOWED_HOSTS):
        return False
    trusted = {origin_tuple(url) for url in settings.CSRF_TRUSTED_ORIGINS}
    return origin == own_origin(scope) or origin in trusted


class SameOriginValidator:
    """ASGI middleware: close a websocket handshake whose Origin is not the page's own."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not allowed_origin(scope):
            denier = WebsocketDenier()
            return await denier(scope, receive, send)
        return await self.application(scope, receive, send)
