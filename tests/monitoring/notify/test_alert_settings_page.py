"""Alert settings: preferences, and webhooks that must be http(s) and belong to whoever added them."""

import pytest
from rest_framework.test import APIClient

from monitoring.notify.models import NotificationPreference
from monitoring.notify.transports.webhook.models import Webhook


@pytest.mark.parametrize("url", ["ftp://example.org/hook", "javascript:alert(1)", "file:///etc/passwd", "not a url"])
def test_a_webhook_url_that_is_not_http_is_refused(client, cast, url):
    client.force_login(cast["owner"])
    response = client.post("/alerts/settings/", {"form": "webhook", "name": "bad", "url": url})
    assert response.status_code == 400
    assert "Enter a valid URL" in response.content.decode() or "http:// or https://" in response.content.decode()
    assert not Webhook.objects.exists()


def test_a_webhook_is_added_with_a_secret_shown_to_its_owner(client, cast):
    client.force_login(cast["owner"])
    data = {"form": "webhook", "name": "lab slack", "url": "https://hooks.example.org/T1"}
    response = client.post("/alerts/settings/", data, follow=True)
    hook = Webhook.objects.get()
    assert hook.user == cast["owner"] and len(hook.secret) >= 32
    assert hook.secret in response.content.decode()


def test_nobody_removes_someone_else_webhook(client, cast):
    hook = Webhook.objects.create(user=cast["owner"], name="mine", url="https://example.org/h")
    client.force_login(cast["teammate"])
    assert client.post(f"/alerts/webhooks/{hook.pk}/delete/").status_code == 404
    assert client.post(f"/alerts/webhooks/{hook.pk}/toggle/").status_code == 404
    assert Webhook.objects.get().active


def test_preferences_are_saved(client, cast):
    client.force_login(cast["owner"])
    data = {"form": "preferences", "email_min_severity": "critical", "webhooks": "on"}
    client.post("/alerts/settings/", data)
    prefs = NotificationPreference.objects.get(user=cast["owner"])
    assert (prefs.email, prefs.email_min_severity, prefs.webhooks) == (False, "critical", True)


def test_an_unknown_severity_is_refused(client, cast):
    client.force_login(cast["owner"])
    response = client.post("/alerts/settings/", {"form": "preferences", "email_min_severity": "panic"})
    assert response.status_code == 400
    assert not NotificationPreference.objects.exists()


def test_the_webhook_api_refuses_other_schemes_and_hides_other_people_hooks(cast):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    response = api.post("/api/webhooks/", {"name": "x", "url": "gopher://example.org"}, format="json")
    assert response.status_code == 400 and "url" in response.json()["errors"]
    created = api.post("/api/webhooks/", {"name": "ok", "url": "https://hooks.example.org/h"}, format="json").json()
    assert created["secret"]
    api.force_authenticate(cast["teammate"])
    assert api.get("/api/webhooks/").json()["results"] == []
    assert api.delete(f"/api/webhooks/{created['id']}/").status_code == 404


def test_the_preferences_api(cast):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    assert api.get("/api/alert-preferences/").json()["email"] is True
    response = api.put("/api/alert-preferences/", {"email": False, "email_min_severity": "nope"}, format="json")
    assert response.status_code == 400 and "email_min_severity" in response.json()["errors"]
    response = api.put("/api/alert-preferences/", {"email": False, "email_min_severity": "info"}, format="json")
    assert response.status_code == 200
    assert NotificationPreference.objects.get(user=cast["owner"]).email is False
