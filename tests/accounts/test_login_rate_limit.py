"""Login rate limiting: wrong passwords for one username from one address are answered only so often."""

from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db
LOGIN = reverse("login")
LIMIT = settings.AXES_FAILURE_LIMIT


def log_in(client, username: str, password: str):
    return client.post(LOGIN, {"username": username, "password": password})


def test_twenty_wrong_passwords_are_not_all_answered(client, cast):
    statuses = [log_in(client, "alice", f"guess-{n}").status_code for n in range(20)]
    assert statuses == [200] * (LIMIT - 1) + [429] * (20 - LIMIT + 1)


def test_a_locked_out_login_says_why_and_for_how_long(client, cast):
    for n in range(LIMIT):
        response = log_in(client, "alice", f"guess-{n}")
    text = response.content.decode()
    assert "Too many failed logins" in text and f"{settings.AXES_COOLOFF_TIME.seconds // 60} minutes" in text
    assert int(response["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()


def test_the_right_password_waits_out_the_lockout_too(client, cast):
    for n in range(LIMIT):
        log_in(client, "alice", f"guess-{n}")
    assert log_in(client, "alice", PASSWORD).status_code == 429
    assert "_auth_user_id" not in client.session
    with time_machine.travel(timezone.now() + settings.AXES_COOLOFF_TIME + timedelta(seconds=1)):
        assert log_in(client, "alice", PASSWORD).status_code == 302


def test_another_username_still_logs_in(client, cast):
    for n in range(LIMIT):
        log_in(client, "alice", f"guess-{n}")
    assert log_in(client, "bob", PASSWORD).status_code == 302


def test_a_success_forgives_earlier_mistakes(client, cast):
    for n in range(LIMIT - 1):
        log_in(client, "alice", f"guess-{n}")
    assert log_in(client, "alice", PASSWORD).status_code == 302
    client.logout()
    assert log_in(client, "alice", "one-more-typo").status_code == 200


def test_the_token_endpoint_is_limited_the_same_way(cast):
    api = APIClient()
    body = {"username": "alice", "name": "script"}
    statuses = [api.post("/api/token/", body | {"password": f"guess-{n}"}, format="json") for n in range(LIMIT + 1)]
    assert [r.status_code for r in statuses] == [400] * (LIMIT - 1) + [429, 429]
    assert "Too many failed logins" in statuses[-1].json()["detail"]
    assert api.post("/api/token/", body | {"password": PASSWORD}, format="json").status_code == 429
    assert not cast["owner"].api_tokens.exists()


def test_the_admin_login_is_limited_too(client, cast):
    admin_login = reverse("admin:login")
    body = {"username": "root", "password": "nope", "next": "/admin/"}
    statuses = [client.post(admin_login, body).status_code for _ in range(LIMIT)]
    assert statuses[-1] == 429
