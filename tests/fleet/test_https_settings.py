"""HTTPS settings from the environment: the proxy's header makes addresses https, bad values fail loudly."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from fleet.env import proxy_ssl_header


@pytest.mark.parametrize(
    "value, expected",
    [
        ("X-Forwarded-Proto", ("HTTP_X_FORWARDED_PROTO", "https")),
        ("X-Forwarded-Ssl: on", ("HTTP_X_FORWARDED_SSL", "on")),
        ("", None),
    ],
)
def test_the_proxy_header_is_read_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("SECURE_PROXY_SSL_HEADER", value)
    assert proxy_ssl_header("SECURE_PROXY_SSL_HEADER") == expected


def test_a_header_that_is_no_header_fails_loudly(monkeypatch):
    monkeypatch.setenv("SECURE_PROXY_SSL_HEADER", "X Forwarded Proto")
    with pytest.raises(ImproperlyConfigured, match="SECURE_PROXY_SSL_HEADER"):
        proxy_ssl_header("SECURE_PROXY_SSL_HEADER")


@pytest.mark.django_db
def test_behind_a_tls_proxy_the_calendar_address_is_https(client, cast, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ALLOWED_HOSTS = ["fleet.example.org"]
    client.force_login(cast["owner"])
    proxied = {"HTTP_HOST": "fleet.example.org", "HTTP_X_FORWARDED_PROTO": "https"}
    response = client.post(reverse("fleet:new-calendar-address"), follow=True, **proxied)
    shown = " ".join(str(m) for m in response.context["messages"])
    assert "https://fleet.example.org/ical/" in shown


@pytest.mark.django_db
def test_every_page_carries_the_content_security_policy(client, cast):
    client.force_login(cast["owner"])
    header = client.get("/fleet/")["Content-Security-Policy"]
    # The directives' order in the header is not fixed: compare them as a mapping.
    policy = dict(directive.strip().split(" ", 1) for directive in header.split(";") if directive.strip())
    assert policy["default-src"] == policy["script-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
