"""Browser websockets: the Origin must be the page's own scheme, host and port (or a trusted origin)."""

import pytest

from fleet.origin import allowed_origin


def scope(origin: str, host: str = "fleet.example.org", scheme: str = "wss", extra=()) -> dict:
    headers = [(b"origin", origin.encode()), (b"host", host.encode()), *extra]
    return {"type": "websocket", "scheme": scheme, "headers": headers}


@pytest.fixture(autouse=True)
def hosts(settings):
    settings.ALLOWED_HOSTS = ["fleet.example.org", "127.0.0.1"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://fleet.example.org:8443"]
    settings.SECURE_PROXY_SSL_HEADER = None


@pytest.mark.parametrize(
    ("origin", "host", "scheme"),
    [
        ("https://fleet.example.org", "fleet.example.org", "wss"),
        ("http://127.0.0.1:8000", "127.0.0.1:8000", "ws"),
        ("https://fleet.example.org:8443", "elsewhere.example.org", "ws"),  # trusted
    ],
)
def test_the_pages_own_origin_is_allowed(origin, host, scheme):
    assert allowed_origin(scope(origin, host, scheme))


@pytest.mark.parametrize(
    ("origin", "host", "scheme"),
    [
        ("http://127.0.0.1:9999", "127.0.0.1:8000", "ws"),  # another port of an allowed host
        ("http://fleet.example.org", "fleet.example.org", "wss"),  # plain http page on a TLS socket
        ("https://evil.example.com", "evil.example.com", "wss"),  # not an allowed host
        ("null", "fleet.example.org", "wss"),
        ("https://fleet.example.org:99999", "fleet.example.org", "wss"),
        ("", "fleet.example.org", "wss"),
    ],
)
def test_any_other_origin_is_refused(origin, host, scheme):
    assert not allowed_origin(scope(origin, host, scheme))


def test_behind_a_tls_proxy_the_forwarded_scheme_counts(settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    forwarded = [(b"x-forwarded-proto", b"https")]
    assert allowed_origin(scope("https://fleet.example.org", scheme="ws", extra=forwarded))
    assert not allowed_origin(scope("http://fleet.example.org", scheme="ws", extra=forwarded))
