"""Admin silences: a silenced alert still opens but notifies nobody; silences expire; the page and the API
refuse bad input with clear errors and store nothing."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from monitoring.alerts import lifecycle, silences
from monitoring.alerts.choices import AlertKind, AlertStatus
from monitoring.alerts.findings import Finding
from monitoring.alerts.models import Silence
from monitoring.notify.from_events import dispatch_pending
from monitoring.notify.models import Notification
from tests.support.telemetry import add_gpu

_n = iter(range(1, 10_000))


def idle_alert(owner, gpu, kind=AlertKind.IDLE_PROCESS):
    finding = Finding(
        key=f"test:silence:{next(_n)}",
        kind=kind,
        title=f"Idle python on {gpu.node.hostname}",
        owner_id=owner.pk,
        node_id=gpu.node_id,
        gpu_id=gpu.pk,
    )
    return lifecycle.open_alerts([finding], timezone.now())[0]


def told(alert) -> set[tuple[str, str]]:
    return set(Notification.objects.filter(event__alert=alert).values_list("user__username", "transport"))


@pytest.fixture
def gpus(db):
    return add_gpu("gpu-01", 0), add_gpu("gpu-02", 0)


def test_a_silenced_alert_opens_but_tells_nobody_and_a_silence_expires(cast, gpus, clock):
    alice, (quiet, loud) = cast["owner"], gpus
    silences.create(by=cast["admin"], duration=timedelta(hours=2), reason="maintenance", node=quiet.node)
    muted, heard = idle_alert(alice, quiet), idle_alert(alice, loud)
    dispatch_pending()
    assert muted.status == AlertStatus.OPEN and told(muted) == set()
    assert told(heard) == {("alice", "inapp"), ("alice", "email")}

    clock.shift(timedelta(hours=2, seconds=1))  # the silence has ended
    lifecycle.escalate_alerts([muted], "Still open.", timezone.now())
    dispatch_pending()
    assert ("root", "inapp") in told(muted)


def test_every_matcher_must_match(cast, gpus, clock):
    alice, bob, (gpu, _) = cast["owner"], cast["teammate"], gpus
    silences.create(by=cast["admin"], duration=timedelta(hours=1), reason="x", node=gpu.node, user=alice)
    alices, bobs = idle_alert(alice, gpu), idle_alert(bob, gpu)
    budget_silence = silences.create(by=cast["admin"], duration=timedelta(hours=1), reason="y", kind=AlertKind.BUDGET)
    dispatch_pending()
    assert told(alices) == set() and told(bobs) == {("bob", "inapp"), ("bob", "email")}
    assert not budget_silence.matches(alices)


def test_expiring_ends_a_silence_now_and_keeps_it(cast, gpus, clock):
    silence = silences.create(by=cast["admin"], duration=timedelta(days=1), reason="x", node=gpus[0].node)
    silences.expire(silence)
    silence.refresh_from_db()
    assert not silence.is_active() and silence.ends_at <= timezone.now()
    dispatch_pending()
    alert = idle_alert(cast["owner"], gpus[0])
    dispatch_pending()
    assert told(alert)


# The page


def test_an_admin_silences_a_node_from_the_page_and_the_alerts_page_shows_it(client, cast, gpus):
    client.force_login(cast["admin"])
    answer = client.post(
        "/alerts/silences/", {"node": gpus[0].node_id, "kind": "", "duration": "90m", "reason": "driver update"}
    )
    assert answer.status_code == 302
    silence = Silence.objects.get()
    assert silence.ends_at - silence.starts_at == timedelta(minutes=90) and silence.created_by == cast["admin"]
    alert = idle_alert(cast["owner"], gpus[0])
    client.force_login(cast["owner"])
    page = client.get("/alerts/").content.decode()
    assert "driver update" in page and "data-silenced" in page
    assert "driver update" in client.get(f"/alerts/{alert.pk}/").content.decode()


@pytest.mark.parametrize(
    "form, error",
    [
        ({"node": "", "duration": "1h", "reason": "x"}, "Silence by node, owner or rule (at least one)."),
        ({"kind": "budget", "duration": "99999d", "reason": "x"}, "Silence for between 1 minute and 30 days."),
        ({"kind": "budget", "duration": "forever", "reason": "x"}, "Give a duration such as"),
        ({"kind": "budget", "duration": "1h", "reason": "bad\x00byte"}, "contains a NUL character"),
        ({"kind": "budget", "duration": "1h\x00", "reason": "x"}, "contains a NUL character"),
        ({"kind": "no-such-rule", "duration": "1h", "reason": "x"}, "Select a valid choice."),
        ({"kind": "budget", "duration": "1h", "reason": ""}, "This field is required."),
    ],
)
def test_the_form_refuses_bad_input_clearly_and_stores_nothing(client, cast, form, error):
    client.force_login(cast["admin"])
    answer = client.post("/alerts/silences/", form)
    assert answer.status_code == 400 and error in answer.content.decode()
    assert not Silence.objects.exists()


def test_researchers_cannot_silence(client, cast):
    client.force_login(cast["owner"])
    assert client.get("/alerts/silences/").status_code == 403
    assert client.post("/alerts/silences/", {"kind": "budget", "duration": "1h", "reason": "x"}).status_code == 403
    silence = silences.create(by=cast["admin"], duration=timedelta(hours=1), reason="x", kind=AlertKind.BUDGET)
    assert client.post(f"/alerts/silences/{silence.pk}/expire/").status_code == 403
    assert Silence.objects.get().is_active()


# The API


@pytest.fixture
def api():
    return APIClient()


def test_an_admin_silences_and_expires_through_the_api(api, cast, gpus):
    api.force_authenticate(cast["admin"])
    made = api.post("/api/silences/", {"node": "gpu-01", "user": "alice", "minutes": 60, "reason": "reboot"})
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["node"] == "gpu-01" and body["user"] == "alice" and body["active"] and body["created_by"] == "root"
    assert [s["id"] for s in api.get("/api/silences/?active=true").json()["results"]] == [body["id"]]
    assert api.delete(f"/api/silences/{body['id']}/").status_code == 204
    assert api.get(f"/api/silences/{body['id']}/").json()["active"] is False
    assert api.get("/api/silences/?active=true").json()["results"] == []


@pytest.mark.parametrize(
    "body, field",
    [
        ({"minutes": 60, "reason": "x"}, "non_field_errors"),
        ({"kind": "budget", "minutes": 10**9, "reason": "x"}, "minutes"),
        ({"kind": "budget", "minutes": 0, "reason": "x"}, "minutes"),
        ({"kind": "budget", "minutes": 60, "reason": "nul\x00"}, "reason"),
        ({"node": "no-such-node", "minutes": 60, "reason": "x"}, "node"),
        ({"kind": "budget", "minutes": 60, "reason": "x" * 201}, "reason"),
    ],
)
def test_the_api_refuses_bad_input_in_the_usual_shape(api, cast, body, field):
    api.force_authenticate(cast["admin"])
    answer = api.post("/api/silences/", body, format="json")
    assert answer.status_code == 400
    data = answer.json()
    assert field in data["errors"] and data["detail"]
    assert not Silence.objects.exists()


def test_researchers_read_silences_but_cannot_add_them(api, cast):
    api.force_authenticate(cast["owner"])
    assert api.get("/api/silences/").status_code == 200
    assert api.post("/api/silences/", {"kind": "budget", "minutes": 60, "reason": "x"}).status_code == 403
    assert api.get("/api/silences/?active=maybe").status_code == 400
