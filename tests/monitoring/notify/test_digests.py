"""Digests and quiet hours: email and webhook messages held until the person's period ends or their quiet
hours are over, then sent as one message per channel; in-app notifications arrive at once."""

import json
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal

import pytest
import time_machine
from rest_framework.test import APIClient

from monitoring.alerts.choices import IdleStretchKind
from monitoring.alerts.models import IdleStretch
from monitoring.notify.choices import Delivery, NotificationStatus, TransportKind
from monitoring.notify.from_events import dispatch_pending
from monitoring.notify.held import send_held, send_held_notifications
from monitoring.notify.models import Notification, NotificationPreference, UnderusedReported
from monitoring.notify.timing import release_at
from monitoring.notify.transports.webhook.models import Webhook
from tests.support.alerts import Receiver, open_alert
from tests.support.telemetry import add_gpu
from tests.support.workers import wait_for

BERLIN = "Europe/Berlin"  # UTC+1 in November


def at(hour: int, minute: int = 0, day: int = 10) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


def emails(user) -> list[Notification]:
    return list(Notification.objects.filter(user=user, transport=TransportKind.EMAIL).order_by("id"))


def alert_at(clock, moment, owner, title):
    clock.move_to(moment)
    alert = open_alert(owner=owner, title=title)
    dispatch_pending()
    return alert


def test_an_hourly_digest_collects_the_hour_into_one_email(cast, clock, mailoutbox):
    alice = cast["owner"]
    NotificationPreference.objects.create(user=alice, email_delivery=Delivery.HOURLY, time_zone=BERLIN)
    for minute in (5, 20, 40):
        alert_at(clock, at(12, minute), alice, f"Idle python at :{minute}")
    assert Notification.objects.filter(user=alice, transport=TransportKind.IN_APP, deliver_after=None).count() == 3
    assert {n.deliver_after for n in emails(alice)} == {at(13)}  # 14:00 in Berlin, the end of its hour

    clock.move_to(at(12, 59))
    assert send_held() == 0 and mailoutbox == []
    clock.move_to(
        at(
            13,
            0,
        )
        + timedelta(seconds=30)
    )
    assert send_held() == 1 and send_held() == 0
    (mail,) = mailoutbox
    assert mail.subject == "[GPU Fleet] 3 alert updates (hourly digest)"
    assert all(f"Idle python at :{m}" in mail.body for m in (5, 20, 40))
    assert "13:05 CET" in mail.body  # the person's zone, named
    assert {n.status for n in emails(alice)} == {NotificationStatus.SENT}


def test_quiet_hours_hold_mail_back_and_deliver_it_after(cast, clock, mailoutbox):
    alice = cast["owner"]
    NotificationPreference.objects.create(user=alice, quiet_start=time(22), quiet_end=time(7), time_zone=BERLIN)
    alert_at(clock, at(21, 30), alice, "Idle at 22:30 CET")
    alert_at(clock, at(23, 0), alice, "Idle at midnight CET")
    assert Notification.objects.filter(user=alice, transport=TransportKind.IN_APP, deliver_after=None).count() == 2
    assert {n.deliver_after for n in emails(alice)} == {at(6, day=11)}  # 07:00 in Berlin

    clock.move_to(at(5, 59, day=11))
    assert send_held() == 0 and mailoutbox == []
    clock.move_to(at(6, 1, day=11))
    assert send_held() == 1
    (mail,) = mailoutbox
    assert mail.subject == "[GPU Fleet] 2 alert updates (held during your quiet hours)"


def test_outside_quiet_hours_mail_goes_at_once(cast, clock, mailoutbox):
    alice = cast["owner"]
    NotificationPreference.objects.create(user=alice, quiet_start=time(22), quiet_end=time(7), time_zone=BERLIN)
    alert_at(clock, at(12), alice, "Idle at noon")
    (note,) = emails(alice)
    assert note.deliver_after is None


@pytest.mark.parametrize(
    "prefs, now, expected",
    [
        ({"email_delivery": Delivery.DAILY}, at(6, 59), at(7)),  # 08:00 Berlin the same day
        ({"email_delivery": Delivery.DAILY}, at(7, 1), at(7, day=11)),  # else the next day's
        ({"email_delivery": Delivery.HOURLY, "quiet_start": time(13), "quiet_end": time(15)}, at(11, 30), at(14)),
        ({"quiet_start": time(9), "quiet_end": time(17)}, at(8, 30), at(16)),  # a daytime quiet period
        ({"quiet_start": time(9), "quiet_end": time(17)}, at(16, 30), None),
    ],
)
def test_when_a_message_may_go(prefs, now, expected):
    assert release_at(NotificationPreference(time_zone=BERLIN, **prefs), TransportKind.EMAIL, now) == expected


@pytest.fixture
def receiver(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    server = Receiver()
    yield server
    server.close()


@pytest.mark.django_db(transaction=True)
def test_the_beat_task_on_a_real_worker_posts_a_daily_digest_once(celery_worker, receiver, cast):
    alice = cast["owner"]
    NotificationPreference.objects.create(user=alice, webhook_delivery=Delivery.DAILY, time_zone=BERLIN)
    Webhook.objects.create(user=alice, name="lab", url=receiver.url)
    three_days_ago = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=3)
    with time_machine.travel(three_days_ago, tick=False) as clock:
        for minute in (5, 50):
            alert_at(clock, three_days_ago + timedelta(minutes=minute), alice, f"Idle python at :{minute}")
    # the worker's clock is the real one, past the next 08:00 in Berlin after then: the digest is due
    for _ in range(2):
        send_held_notifications.delay()
    hooks = Notification.objects.filter(user=alice, transport=TransportKind.WEBHOOK)
    assert hooks.count() == 2 and not hooks.filter(deliver_after=None).exists()
    wait_for(lambda: all(n.status == NotificationStatus.SENT for n in hooks.all()), timeout_s=30, what="the digest")
    ((_, body),) = receiver.requests
    data = json.loads(body)
    assert data["text"].startswith("*2 alert updates (daily digest)*")
    assert [d["alert"]["title"] for d in data["digest"]] == ["Idle python at :5", "Idle python at :50"]


# Preferences: bad input gets a clear error and changes nothing


@pytest.mark.parametrize(
    "data, error",
    [
        ({"quiet_start": "22:00"}, "Give both ends of the quiet hours (or neither)."),
        ({"quiet_start": "22:00", "quiet_end": "22:00"}, "Quiet hours must end at another time than they start."),
        ({"quiet_start": "25:00", "quiet_end": "07:00"}, "Enter a valid time."),
        ({"time_zone": "Mars/Olympus"}, "Select a valid choice."),
        ({"email_delivery": "weekly"}, "Select a valid choice."),
        ({"time_zone": "Europe/Berlin\x00"}, "contains a NUL character"),
    ],
)
def test_the_settings_form_refuses_bad_preferences(client, cast, data, error):
    client.force_login(cast["owner"])
    response = client.post("/alerts/settings/", {"form": "preferences", "email_min_severity": "warning", **data})
    assert response.status_code == 400 and error in response.content.decode()
    assert not NotificationPreference.objects.exists()


def test_the_settings_form_saves_digests_and_quiet_hours(client, cast):
    client.force_login(cast["owner"])
    data = {
        "form": "preferences",
        "email": "on",
        "email_min_severity": "warning",
        "email_delivery": "daily",
        "webhook_delivery": "hourly",
        "quiet_start": "22:00",
        "quiet_end": "07:00",
        "time_zone": BERLIN,
    }
    assert client.post("/alerts/settings/", data).status_code == 302
    prefs = NotificationPreference.objects.get(user=cast["owner"])
    assert (prefs.email_delivery, prefs.webhook_delivery, prefs.quiet_end, prefs.time_zone) == (
        "daily",
        "hourly",
        time(7),
        BERLIN,
    )


@pytest.mark.parametrize(
    "body, field",
    [
        ({"quiet_end": "07:00"}, "quiet_start"),
        ({"time_zone": "Nowhere/Land"}, "time_zone"),
        ({"time_zone": "Europe/Berlin\u0000"}, "time_zone"),
        ({"time_zone": "Europe/" + "x" * 100}, "time_zone"),
        ({"webhook_delivery": "weekly"}, "webhook_delivery"),
        ({"quiet_start": "7", "quiet_end": "08:00"}, "quiet_start"),
    ],
)
def test_the_preferences_api_refuses_bad_input_in_the_usual_shape(cast, body, field):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    response = api.put("/api/alert-preferences/", body, format="json")
    assert response.status_code == 400 and field in response.json()["errors"]
    assert not NotificationPreference.objects.exists()
    saved = api.put("/api/alert-preferences/", {"email_delivery": "hourly", "time_zone": BERLIN}, format="json")
    assert saved.status_code == 200 and saved.json()["email_delivery"] == "hourly"


def test_the_digest_lists_the_persons_underused_gpus_with_their_idle_cost(cast, clock, gpu, mailoutbox):
    alice = cast["owner"]
    NotificationPreference.objects.create(user=alice, email_delivery=Delivery.HOURLY)
    alert_at(clock, at(12, 5), alice, "Idle python")
    alert_at(clock, at(12, 45), alice, "Idle notebook")
    IdleStretch.objects.create(
        key=f"idle_process:{gpu.uuid}:5000:0", kind=IdleStretchKind.UNDERUSED, gpu=gpu, pid=5000, os_user="alice",
        name="vllm", owner=alice, began=at(12, 10), until=at(12, 40), rate=Decimal("2.50"),
    )  # fmt: skip
    clock.move_to(at(13) + timedelta(seconds=30))
    assert send_held() == 1
    (mail,) = mailoutbox
    assert "Underused GPUs" in mail.body
    assert "vllm (pid 5000) on gpu-01 GPU 0: 0.5 idle GPU-hours in 1 stretches, $1.25" in mail.body


# Underused GPUs reach their owner's digest, with or without alerts


def underused_stretch(gpu, owner, began, until, pid=5000, name="vllm"):
    return IdleStretch.objects.create(
        key=f"idle_process:{gpu.uuid}:{pid}:0", kind=IdleStretchKind.UNDERUSED, gpu=gpu, pid=pid, os_user="alice",
        name=name, owner=owner, began=began, until=until, rate=Decimal("2.50"),
    )  # fmt: skip


def test_a_person_with_underused_gpus_and_no_alert_gets_their_hourly_digest(cast, clock, gpu, mailoutbox):
    alice = cast["owner"]
    NotificationPreference.objects.create(user=alice, email_delivery=Delivery.HOURLY, time_zone=BERLIN)
    underused_stretch(gpu, alice, at(12, 10), at(12, 40))
    clock.move_to(at(12, 59))
    assert send_held() == 0 and mailoutbox == []
    clock.move_to(at(13) + timedelta(seconds=30))
    assert send_held() == 1 and send_held() == 0  # once, however often beat looks
    (mail,) = mailoutbox
    assert mail.subject == "[GPU Fleet] 1 underused GPU (hourly digest)"
    assert "vllm (pid 5000) on gpu-01 GPU 0: 0.5 idle GPU-hours in 1 stretches, $1.25" in mail.body
    assert "to Tue 10 Nov 14:00 CET:" in mail.body  # the period, in the person's zone, named
    assert not Notification.objects.exists()  # nothing was alerted

    underused_stretch(gpu, alice, at(13, 10), at(13, 40), pid=5001, name="triton")
    clock.move_to(at(14) + timedelta(seconds=30))
    assert send_held() == 1
    later = mailoutbox[1].body
    assert "triton (pid 5001)" in later and "vllm" not in later  # each period told once
    assert "from Tue 10 Nov 14:00 to Tue 10 Nov 15:00 CET" in later
    clock.move_to(at(15) + timedelta(seconds=30))
    assert send_held() == 0 and len(mailoutbox) == 2  # an hour with nothing underused sends nothing


def test_the_underused_digest_waits_for_the_end_of_quiet_hours_and_covers_them(cast, clock, gpu, mailoutbox):
    alice = cast["owner"]
    NotificationPreference.objects.create(
        user=alice, email_delivery=Delivery.HOURLY, quiet_start=time(22), quiet_end=time(7), time_zone=BERLIN
    )
    underused_stretch(gpu, alice, at(18, 10), at(18, 40), pid=4000, name="evening")
    clock.move_to(at(19) + timedelta(seconds=30))  # 20:00 in Berlin
    assert send_held() == 1
    underused_stretch(gpu, alice, at(23, 10), at(23, 50), pid=5000, name="night")
    for hour in (21, 22, 23):  # 22:00 to 00:00 in Berlin: quiet
        clock.move_to(at(hour) + timedelta(seconds=30))
        assert send_held() == 0
    clock.move_to(at(6, day=11) + timedelta(seconds=30))  # 07:00 in Berlin
    assert send_held() == 1
    body = mailoutbox[1].body
    assert "night (pid 5000)" in body and "evening" not in body
    assert "from Tue 10 Nov 20:00 to Wed 11 Nov 07:00 CET" in body


def test_a_daily_digest_lists_underused_gpus_at_the_digest_hour_in_the_persons_zone(cast, clock, gpu, mailoutbox):
    alice = cast["owner"]
    NotificationPreference.objects.create(user=alice, email_delivery=Delivery.DAILY, time_zone=BERLIN)
    underused_stretch(gpu, alice, at(12, 10), at(14, 10))
    clock.move_to(at(6, 59, day=11))  # 07:59 in Berlin
    assert send_held() == 0
    clock.move_to(at(7, 0, day=11) + timedelta(seconds=30))
    assert send_held() == 1
    (mail,) = mailoutbox
    assert mail.subject == "[GPU Fleet] 1 underused GPU (daily digest)"
    assert "2.0 idle GPU-hours in 1 stretches, $5.00" in mail.body


def test_people_who_take_mail_immediately_get_no_underused_digest(cast, clock, gpu, mailoutbox):
    underused_stretch(gpu, cast["owner"], at(12, 10), at(12, 40))
    NotificationPreference.objects.create(user=cast["owner"], time_zone=BERLIN)
    clock.move_to(at(13) + timedelta(seconds=30))
    assert send_held() == 0 and mailoutbox == []


def test_a_webhook_digest_lists_underused_gpus_like_the_email(cast, clock, gpu, receiver, mailoutbox):
    alice = cast["owner"]
    NotificationPreference.objects.create(
        user=alice, email_delivery=Delivery.HOURLY, webhook_delivery=Delivery.HOURLY, time_zone=BERLIN
    )
    Webhook.objects.create(user=alice, name="lab", url=receiver.url)
    alert_at(clock, at(12, 5), alice, "Idle python")
    underused_stretch(gpu, alice, at(12, 10), at(12, 40))
    clock.move_to(at(13) + timedelta(seconds=30))
    assert send_held() == 2  # the email and the webhook
    ((headers, body),) = receiver.requests
    data = json.loads(body)
    (mail,) = mailoutbox
    assert mail.subject == "[GPU Fleet] 1 alert update, 1 underused GPU (hourly digest)"
    assert data["text"].startswith("*1 alert update, 1 underused GPU (hourly digest)*")
    line = "vllm (pid 5000) on gpu-01 GPU 0: 0.5 idle GPU-hours in 1 stretches, $1.25"
    assert line in data["text"] and line in mail.body
    assert [d["alert"]["title"] for d in data["digest"]] == ["Idle python"]
    ((_, title),) = [(u["pid"], u["name"]) for u in data["underused"]]
    assert title == "vllm" and data["underused"][0]["idle_cost"] == "1.25"
    assert data["period"] == {"since": at(13, day=9).isoformat(), "until": at(13).isoformat()}  # a first digest: a day


@pytest.mark.django_db(transaction=True)
def test_the_beat_task_on_a_real_worker_posts_an_underused_digest_once(celery_worker, receiver, cast, gpu_models):
    alice = cast["owner"]
    NotificationPreference.objects.create(user=alice, webhook_delivery=Delivery.HOURLY, time_zone=BERLIN)
    Webhook.objects.create(user=alice, name="lab", url=receiver.url)
    three_hours_ago = datetime.now(UTC) - timedelta(hours=3)  # inside the day the first digest reaches back
    underused_stretch(add_gpu("gpu-01", 0), alice, three_hours_ago, three_hours_ago + timedelta(minutes=45))
    for _ in range(2):
        send_held_notifications.delay()
    wait_for(lambda: UnderusedReported.objects.filter(until__isnull=False).exists(), timeout_s=30, what="the digest")
    wait_for(lambda: len(receiver.requests) >= 1, timeout_s=30, what="the post")
    assert send_held() == 0  # a third look finds nothing owed
    ((headers, body),) = receiver.requests
    data = json.loads(body)
    assert data["text"].startswith("*1 underused GPU (hourly digest)*")
    assert data["digest"] == [] and data["underused"][0]["name"] == "vllm"
    assert "x-fleet-event" not in headers and headers["webhook-id"].startswith("msg_underused_")


@pytest.fixture
def flaky_receiver(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    server = Receiver(answers=[503])
    yield server
    server.close()


def test_an_underused_digest_the_endpoint_refused_for_now_is_sent_at_the_next_look(cast, clock, gpu, flaky_receiver):
    alice = cast["owner"]
    NotificationPreference.objects.create(user=alice, webhook_delivery=Delivery.HOURLY, time_zone=BERLIN)
    Webhook.objects.create(user=alice, name="lab", url=flaky_receiver.url)
    underused_stretch(gpu, alice, at(12, 10), at(12, 40))
    clock.move_to(at(13) + timedelta(seconds=30))
    assert send_held() == 0
    mark = UnderusedReported.objects.get(user=alice)
    assert mark.until is None and mark.attempts == 1 and "answered 503" in mark.error  # the period given back
    clock.move_to(at(13, 1) + timedelta(seconds=30))
    assert send_held() == 1 and send_held() == 0
    assert len(flaky_receiver.requests) == 2
    assert json.loads(flaky_receiver.requests[1][1])["underused"][0]["name"] == "vllm"
    mark.refresh_from_db()
    assert mark.until == at(13) and mark.attempts == 0 and mark.error == ""
