"""API tokens: stored as hashes, shown once, named, several per user, expiring and revocable."""

import importlib
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.tokens import issue
from inventory.node_tokens import hash_token
from tests.conftest import PASSWORD
from tests.support.reservations import api_client

pytestmark = pytest.mark.django_db
PAGE = reverse("fleet:tokens")
FLEET_API = "/api/fleet/"


def stored_text() -> str:
    """Every value of every token row, as PostgreSQL keeps it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT t::text FROM fleet_apitoken t")
        return " ".join(row[0] for row in cursor.fetchall())


def test_a_new_tokens_key_is_nowhere_in_the_database(cast):
    token, key = issue(cast["owner"], "laptop")
    assert key not in stored_text() and key[10:] not in stored_text()
    assert token.key_hash == hash_token(key) and token.prefix == key[:10]
    assert api_client(key).get(FLEET_API).status_code == 200


def test_the_page_shows_a_new_key_once(client, cast):
    client.force_login(cast["owner"])
    made = client.post(PAGE, {"name": "laptop", "expires": "30"})
    assert made.status_code == 200 and "no-store" in made["Cache-Control"]
    key = made.context["new_key"]
    assert key in made.content.decode() and api_client(key).get(FLEET_API).status_code == 200
    later = client.get(PAGE).content.decode()
    assert key not in later and key[:10] in later and "laptop" in later
    token = ApiToken.objects.get()
    assert timedelta(days=29, hours=23) < token.expires_at - timezone.now() <= timedelta(days=30)


def test_a_user_has_several_tokens_each_working(cast):
    keys = [issue(cast["owner"], name)[1] for name in ("laptop", "ci", "notebook")]
    assert [api_client(key).get(FLEET_API).status_code for key in keys] == [200, 200, 200]
    assert cast["owner"].api_tokens.count() == 3


def test_a_nameless_token_is_refused_with_the_field_named(client, cast):
    client.force_login(cast["owner"])
    response = client.post(PAGE, {"name": "", "expires": "30"})
    assert response.status_code == 400 and "name" in response.context["form"].errors
    assert not ApiToken.objects.exists()


def test_an_expired_token_is_refused(cast):
    token, key = issue(cast["owner"], "old", expires_in_days=1)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = api_client(key).get(FLEET_API)
    assert response.status_code == 401 and response.json()["detail"] == "Token expired."


def test_a_revoked_token_stops_working_and_the_others_go_on(client, cast):
    token, key = issue(cast["owner"], "leaked")
    other = issue(cast["owner"], "ci")[1]
    client.force_login(cast["owner"])
    response = client.post(reverse("fleet:token_revoke", args=[token.pk]))
    assert response.status_code == 302
    refused = api_client(key).get(FLEET_API)
    assert refused.status_code == 401 and refused.json()["detail"] == "Token revoked."
    assert api_client(other).get(FLEET_API).status_code == 200
    assert "Revoked" in client.get(PAGE).content.decode()


def test_nobody_revokes_another_users_token(client, cast):
    token, key = issue(cast["owner"], "laptop")
    client.force_login(cast["outsider"])
    assert client.post(reverse("fleet:token_revoke", args=[token.pk])).status_code == 404
    assert api_client(key).get(FLEET_API).status_code == 200


def test_the_page_lists_only_ones_own_tokens(client, cast):
    issue(cast["owner"], "alices-laptop")
    client.force_login(cast["outsider"])
    assert "alices-laptop" not in client.get(PAGE).content.decode()


def test_the_token_endpoint_trades_a_password_for_a_new_token(cast):
    body = {"username": "alice", "password": PASSWORD, "name": "script", "expires_in_days": 7}
    made = APIClient().post("/api/token/", body, format="json")
    assert made.status_code == 201, made.content
    key = made.json()["token"]
    assert made.json()["name"] == "script" and made.json()["expires_at"] is not None
    assert api_client(key).get(FLEET_API).status_code == 200
    assert key not in stored_text()


def test_the_token_endpoint_refuses_a_wrong_password(cast):
    body = {"username": "alice", "password": "wrong", "name": "script"}
    response = APIClient().post("/api/token/", body, format="json")
    assert response.status_code == 400 and response.json()["detail"] == "Wrong username or password."
    assert not ApiToken.objects.exists()


def test_a_token_says_whose_it_is_and_revokes_itself_alone(client, cast):
    token, key = issue(cast["owner"], "laptop")
    other = issue(cast["owner"], "ci")[1]
    me = api_client(key).get("/api/token/current/")
    assert me.status_code == 200 and me.json()["username"] == "alice" and me.json()["name"] == "laptop"

    assert api_client(key).delete("/api/token/current/").status_code == 204

    assert api_client(key).get(FLEET_API).json()["detail"] == "Token revoked."
    assert api_client(other).get("/api/token/current/").json()["name"] == "ci"
    client.force_login(cast["owner"])
    assert client.delete("/api/token/current/").status_code == 400  # a session has no token to revoke


def test_an_admin_makes_a_token_for_a_user_and_sees_its_key_once(client, cast):
    client.force_login(cast["admin"])
    body = {"user": cast["teammate"].pk, "name": "cluster job", "expires_in_days": "90"}
    response = client.post(reverse("admin:accounts_apitoken_add"), body)
    assert response.status_code == 302
    shown = " ".join(str(m) for m in get_messages(response.wsgi_request))
    key = next(word for word in shown.split() if word.startswith("gft_"))
    token = ApiToken.objects.get()
    assert token.user == cast["teammate"] and token.key_hash == hash_token(key) and token.expires_at
    assert api_client(key).get(FLEET_API).status_code == 200


def test_an_admin_revokes_tokens_from_the_list(client, cast):
    token, key = issue(cast["owner"], "laptop")
    client.force_login(cast["admin"])
    changelist = reverse("admin:accounts_apitoken_changelist")
    client.post(changelist, {"action": "revoke_tokens", "_selected_action": [token.pk]})
    assert api_client(key).get(FLEET_API).status_code == 401


def test_the_command_prints_a_key_once(cast, capsys):
    call_command("fleet_create_token", "bob", "--name", "deploy", "--expires-days", "30")
    key = capsys.readouterr().out.strip().splitlines()[-1]
    assert api_client(key).get(FLEET_API).status_code == 200
    assert ApiToken.objects.get().name == "deploy"


def test_plain_keys_from_before_are_hashed_keep_working_and_leave_no_trace(cast):
    """Databases made before named tokens hold DRF's plain keys; the migration hashes them."""
    legacy_key = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"
    with connection.cursor() as cursor:
        cursor.execute(
            'CREATE TABLE "authtoken_token" ("key" varchar(40) PRIMARY KEY, "created" timestamptz NOT NULL,'
            ' "user_id" integer NOT NULL)'
        )
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, now(), %s)", [legacy_key, cast["owner"].pk])
    migration = importlib.import_module("inventory.migrations.0006_api_tokens")
    # The models as that migration saw them: the tokens lived in the inventory app (label fleet) then.
    then = MigrationLoader(connection).project_state(("fleet", "0006_api_tokens")).apps
    with connection.schema_editor() as editor:
        migration.hash_legacy_tokens(then, editor)
    assert "authtoken_token" not in connection.introspection.table_names()
    assert legacy_key not in stored_text()
    assert ApiToken.objects.get().user == cast["owner"]
    assert api_client(legacy_key).get(FLEET_API).status_code == 200
