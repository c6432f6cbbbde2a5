"""Webhooks reach only public addresses: internal ones are refused when saved and again at each delivery."""

import socket

import pytest
from rest_framework.test import APIClient

from monitoring.notify.choices import NotificationStatus, TransportKind
from monitoring.notify.deliver import deliver
from monitoring.notify.from_events import dispatch_event
from monitoring.notify.models import Notification
from monitoring.notify.transports.webhook import targets
from monitoring.notify.transports.webhook.models import Webhook
from tests.support.alerts import Receiver, open_alert

REFUSED = {
    "redis on loopback": "http://127.0.0.1:6379/",
    "cloud metadata": "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "loopback by name": "http://localhost:6379/",
    "another loopback": "http://127.8.9.10/hook",
    "private 10/8": "http://10.0.0.5/hook",
    "private 172.16/12": "https://172.16.3.4/hook",
    "private 192.168/16": "http://192.168.1.1/hook",
    "carrier-grade NAT": "http://100.64.0.1/hook",
    "multicast": "http://224.0.0.1/hook",
    "unspecified": "http://0.0.0.0:8000/",
    "IPv6 loopback": "http://[::1]:6379/",
    "IPv6 link-local": "http://[fe80::1]/hook",
    "IPv6 unique local": "http://[fd00::5]/hook",
    "IPv4-mapped loopback": "http://[::ffff:127.0.0.1]:6379/",
}


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def webhook_delivery(user, url: str) -> Notification:
    """A webhook stored as it is (as one saved before this check, or whose name resolved elsewhere then)."""
    Webhook.objects.create(user=user, name="target", url=url)
    event = open_alert(owner=user).events.get()
    dispatch_event(event.pk)
    return Notification.objects.get(event=event, transport=TransportKind.WEBHOOK)


@pytest.mark.parametrize("url", REFUSED.values(), ids=REFUSED.keys())
def test_the_settings_page_refuses_an_internal_target(client, cast, url):
    client.force_login(cast["owner"])
    response = client.post("/alerts/settings/", {"form": "webhook", "name": "internal", "url": url})
    assert response.status_code == 400
    assert "webhooks only reach public addresses" in response.content.decode()
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("url", REFUSED.values(), ids=REFUSED.keys())
def test_the_api_refuses_an_internal_target(cast, url):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    response = api.post("/api/webhooks/", {"name": "internal", "url": url}, format="json")
    assert response.status_code == 400 and "public addresses" in str(response.json())
    assert not Webhook.objects.exists()


@pytest.mark.parametrize(
    "url", [REFUSED["redis on loopback"], REFUSED["cloud metadata"], REFUSED["IPv6 loopback"]], ids=str
)
def test_a_delivery_to_an_internal_target_fails_at_once_without_connecting(cast, url):
    note = webhook_delivery(cast["owner"], url)
    outcome = deliver(note.pk)
    note.refresh_from_db()
    assert (outcome.status, outcome.retry_in, note.status) == ("failed", None, NotificationStatus.FAILED)
    assert "webhooks only reach public addresses" in note.error


def test_a_name_that_resolves_inside_at_delivery_is_refused(cast, receiver, monkeypatch):
    """DNS rebinding: public when saved, 127.0.0.1 when sent. The address checked is the one connected to."""
    looked_up = []

    def resolver(host, port, *args, **kwargs):
        looked_up.append(host)
        address = "93.184.215.14" if len(looked_up) == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(targets.socket, "getaddrinfo", resolver)
    port = receiver.server.server_address[1]
    hook = Webhook(user=cast["owner"], name="rebinding", url=f"http://hooks.rebind.example:{port}/h")
    hook.full_clean()  # saved while the name was public
    note = webhook_delivery(cast["owner"], hook.url)
    outcome = deliver(note.pk)
    note.refresh_from_db()
    assert outcome.status == "failed" and "hooks.rebind.example (127.0.0.1) is a loopback" in note.error
    assert receiver.requests == [] and looked_up == ["hooks.rebind.example"] * 2


def test_an_admin_allows_an_internal_receiver(cast, receiver, settings, client):
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    client.force_login(cast["owner"])
    response = client.post("/alerts/settings/", {"form": "webhook", "name": "lab", "url": receiver.url})
    assert response.status_code == 302
    event = open_alert(owner=cast["owner"]).events.get()
    dispatch_event(event.pk)
    note = Notification.objects.get(event=event, transport=TransportKind.WEBHOOK)
    assert deliver(note.pk).status == NotificationStatus.SENT and len(receiver.requests) == 1


def test_a_redirect_is_not_followed(cast, settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    server = Receiver(answers=[307])
    try:
        note = webhook_delivery(cast["owner"], server.url)
        assert deliver(note.pk).status == "failed" and len(server.requests) == 1
    finally:
        server.close()


@pytest.mark.parametrize("url", ["https://93.184.215.14/hook", "https://[2606:4700::1111]/hook"])
def test_a_public_address_is_accepted(cast, url):
    Webhook(user=cast["owner"], name="public", url=url).full_clean()
