"""The web server shares a pool of PostgreSQL sessions among requests instead of opening one per request."""

import time
import urllib.request

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)
REQUESTS = 40


def sessions_opened() -> int:
    """Sessions ever opened on the test database, as PostgreSQL's statistics tell."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def test_requests_to_the_web_server_reuse_its_pooled_sessions(asgi_server):
    before = sessions_opened()
    for _ in range(REQUESTS):
        with urllib.request.urlopen(asgi_server.url + "/healthz", timeout=10) as response:  # runs a query
            assert response.status == 200
    time.sleep(2)  # backends report their statistics within a second or so of going idle or ending
    opened = sessions_opened() - before
    # One session per request would be 40; sequential requests need one pooled session, and other tests'
    # processes may open a few meanwhile.
    assert opened <= 10, f"{opened} sessions opened for {REQUESTS} requests"
