"""Health of the parts the web app depends on, for /healthz."""

import redis
from django.conf import settings
from django.db import connection
from kombu import Connection

TIMEOUT_S = 2.0


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def check_redis() -> None:
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
    try:
        client.ping()
    finally:
        client.close()


def check_broker() -> None:
    with Connection(settings.CELERY_BROKER_URL, connect_timeout=TIMEOUT_S) as conn:
        conn.ensure_connection(max_retries=1, timeout=TIMEOUT_S)


CHECKS = {"database": check_database, "redis": check_redis, "broker": check_broker}


def fleet_health() -> dict[str, str]:
    """Each part's state: "up", or "down: <reason>"."""
    states = {}
    for part, check in CHECKS.items():
        try:
            check()
            states[part] = "up"
        except Exception as error:  # any failure means the part is down; the reason is reported
            states[part] = f"down: {type(error).__name__}: {error}"[:300]
    return states
