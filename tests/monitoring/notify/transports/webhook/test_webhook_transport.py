"""Webhooks: signed JSON with a Slack-compatible text reaches a real HTTP server; failures are retried."""

import json
import time

import pytest

from monitoring.notify.choices import NotificationStatus, TransportKind
from monitoring.notify.deliver import deliver
from monitoring.notify.from_events import dispatch_event
from monitoring.notify.models import Notification
from monitoring.notify.transports.webhook.models import Webhook
from tests.support.alerts import Receiver, open_alert
from tests.support.webhooks import documented_verify
from tests.support.workers import wait_for


@pytest.fixture
def receiver(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]  # the receiver is local; tests of refusals are elsewhere
    server = Receiver()
    yield server
    server.close()


def webhook_notification(alert):
    event = alert.events.get()
    dispatch_event(event.pk)
    return Notification.objects.get(event=event, transport=TransportKind.WEBHOOK)


def verify(secret: str, headers: dict, body: bytes, now: float | None = None) -> bool:
    """What a receiver does, as docs/alerts.md writes it."""
    return documented_verify()(secret, headers, body, now)


def test_a_webhook_gets_signed_json_with_a_slack_text(cast, receiver):
    hook = Webhook.objects.create(user=cast["owner"], name="lab slack", url=receiver.url)
    note = webhook_notification(open_alert(owner=cast["owner"]))
    assert deliver(note.pk).status == NotificationStatus.SENT
    ((headers, body),) = receiver.requests
    assert verify(hook.secret, headers, body)
    assert not verify("another-secret", headers, body)
    data = json.loads(body)
    assert data["text"].startswith("*Idle python (pid 4242) on gpu-01 GPU 0*")
    assert data["alert"]["owner"] == "alice" and data["event"]["kind"] == "opened"
    assert headers["content-type"] == "application/json"
    assert hook.secret.startswith("whsec_") and headers["webhook-id"] == f"msg_{note.pk}"


def test_a_replayed_delivery_is_rejected_by_the_documented_receiver(cast, receiver):
    hook = Webhook.objects.create(user=cast["owner"], name="lab", url=receiver.url)
    deliver(webhook_notification(open_alert(owner=cast["owner"])).pk)
    ((headers, body),) = receiver.requests
    signed_at = int(headers["webhook-timestamp"])
    assert abs(signed_at - time.time()) < 60
    assert verify(hook.secret, headers, body, now=signed_at + 299)
    assert not verify(hook.secret, headers, body, now=signed_at + 301), "a capture replayed 5 min later"
    assert not verify(hook.secret, headers, body, now=signed_at - 301)
    refreshed = headers | {"webhook-timestamp": str(signed_at + 600)}
    assert not verify(hook.secret, refreshed, body, now=signed_at + 600), "a new timestamp breaks the signature"
    assert not verify(hook.secret, headers, body.replace(b"alice", b"mallory"), now=signed_at)


def test_a_secret_from_before_whsec_still_signs(cast, receiver):
    hook = Webhook.objects.create(user=cast["owner"], name="old", url=receiver.url, secret="plain-old-secret")
    deliver(webhook_notification(open_alert(owner=cast["owner"])).pk)
    ((headers, body),) = receiver.requests
    assert verify(hook.secret, headers, body) and not verify("whsec_" + "A" * 44, headers, body)


def test_slack_text_escapes_what_slack_would_read_as_markup(cast, receiver):
    Webhook.objects.create(user=cast["owner"], name="lab slack", url=receiver.url)
    alert = open_alert(owner=cast["owner"], title="Idle <!channel> & <@U123|boss> on gpu-01")
    deliver(webhook_notification(alert).pk)
    data = json.loads(receiver.requests[0][1])
    assert data["text"].startswith("*Idle &lt;!channel&gt; &amp; &lt;@U123|boss&gt; on gpu-01*")
    assert "<!channel>" not in data["text"] and data["text"].endswith("|Open in GPU Fleet>")
    assert data["alert"]["title"] == "Idle <!channel> & <@U123|boss> on gpu-01"


def test_a_server_error_releases_the_claim_for_a_retry_with_backoff(cast, receiver, settings):
    settings.NOTIFY_RETRY_BASE_S = 30
    receiver.answers = [500, 503]
    Webhook.objects.create(user=cast["owner"], name="flaky", url=receiver.url)
    note = webhook_notification(open_alert(owner=cast["owner"]))
    first, second = deliver(note.pk), deliver(note.pk)
    assert (first.status, first.retry_in) == (NotificationStatus.PENDING, 30)
    assert second.retry_in == 60
    note.refresh_from_db()
    assert (note.attempts, note.processed) == (2, None)
    assert "503" in note.error
    assert deliver(note.pk).status == NotificationStatus.SENT


def test_a_client_error_is_not_retried(cast, receiver):
    receiver.answers = [404]
    Webhook.objects.create(user=cast["owner"], name="gone", url=receiver.url)
    note = webhook_notification(open_alert(owner=cast["owner"]))
    outcome = deliver(note.pk)
    note.refresh_from_db()
    assert (outcome.status, outcome.retry_in, note.status) == ("failed", None, NotificationStatus.FAILED)
    assert "404" in note.error


def test_it_gives_up_after_the_last_retry(cast, settings):
    settings.NOTIFY_MAX_RETRIES = 2
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    Webhook.objects.create(user=cast["owner"], name="nobody home", url="http://127.0.0.1:9/never")
    note = webhook_notification(open_alert(owner=cast["owner"]))
    outcomes = [deliver(note.pk).status for _ in range(3)]
    assert outcomes == ["pending", "pending", "failed"]
    assert "could not be reached" in Notification.objects.get(pk=note.pk).error


def test_a_claimed_notification_is_sent_once(cast, receiver):
    Webhook.objects.create(user=cast["owner"], name="lab", url=receiver.url)
    note = webhook_notification(open_alert(owner=cast["owner"]))
    assert deliver(note.pk).status == NotificationStatus.SENT
    assert deliver(note.pk).status == "claimed elsewhere"
    assert len(receiver.requests) == 1


def test_paused_webhooks_and_opted_out_people_get_nothing(cast, receiver):
    Webhook.objects.create(user=cast["owner"], name="paused", url=receiver.url, active=False)
    event = open_alert(owner=cast["owner"]).events.get()
    dispatch_event(event.pk)
    assert not Notification.objects.filter(transport=TransportKind.WEBHOOK).exists()


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_retries_after_a_500_until_it_lands(celery_worker, receiver, django_user_model):
    receiver.answers = [500]
    alice = django_user_model.objects.create_user("alice", "alice@example.org", "x")
    hook = Webhook.objects.create(user=alice, name="lab", url=receiver.url)
    event = open_alert(owner=alice).events.get()
    dispatch_event(event.pk)  # commits, so delivery goes to the worker through the broker
    note = Notification.objects.get(event=event, transport=TransportKind.WEBHOOK)
    wait_for(lambda: Notification.objects.get(pk=note.pk).status == NotificationStatus.SENT, what="delivery")
    note.refresh_from_db()
    assert note.attempts == 2
    assert len(receiver.requests) == 2
    assert all(verify(hook.secret, headers, body) for headers, body in receiver.requests)
    assert receiver.requests[0][1] == receiver.requests[1][1]
