"""The Alerts pages: researchers see their own alerts, admins all; owners and admins acknowledge and snooze."""

import json
from zoneinfo import ZoneInfo

from django.utils import timezone

from monitoring.alerts.choices import AlertKind, AlertStatus
from monitoring.alerts.models import Alert
from tests.support.alerts import open_alert


def titles(client, query="") -> str:
    return client.get("/alerts/" + query).content.decode()


def the_cast_alerts(cast) -> dict:
    return {
        "mine": open_alert(owner=cast["owner"], title="alice idle on gpu-01"),
        "bob": open_alert(owner=cast["teammate"], title="bob idle on gpu-02"),
        "budget": open_alert(project=cast["project"], kind=AlertKind.BUDGET, title="vision passed 80 %"),
        "health": open_alert(kind=AlertKind.GPU_TEMPERATURE, title="89 C on gpu-03"),
    }


def test_a_researcher_sees_only_their_own_and_their_project_alerts(client, cast):
    the_cast_alerts(cast)
    client.force_login(cast["owner"])
    body = titles(client, "?scope=all")
    assert "alice idle on gpu-01" in body and "vision passed 80 %" in body
    assert "bob idle on gpu-02" not in body and "89 C on gpu-03" not in body


def test_an_outsider_sees_none_of_them(client, cast):
    the_cast_alerts(cast)
    client.force_login(cast["outsider"])
    body = titles(client)
    assert "No open alerts for you" in body


def test_an_admin_sees_all_alerts(client, cast):
    the_cast_alerts(cast)
    client.force_login(cast["admin"])
    body = titles(client, "?scope=all")
    for title in ("alice idle on gpu-01", "bob idle on gpu-02", "vision passed 80 %", "89 C on gpu-03"):
        assert title in body
    assert "alice idle on gpu-01" not in titles(client, "?scope=mine")


def test_resolved_alerts_are_history(client, cast):
    alerts = the_cast_alerts(cast)
    Alert.objects.filter(pk=alerts["mine"].pk).update(
        status=AlertStatus.RESOLVED, resolved_at=alerts["mine"].opened_at, resolution="The process exited."
    )
    client.force_login(cast["owner"])
    assert "alice idle on gpu-01" not in titles(client)
    body = titles(client, "?state=resolved")
    assert "alice idle on gpu-01" in body and "The process exited." in body


def test_someone_else_alert_page_is_not_found(client, cast):
    alerts = the_cast_alerts(cast)
    client.force_login(cast["owner"])
    assert client.get(f"/alerts/{alerts['bob'].pk}/").status_code == 404
    assert client.get(f"/alerts/{alerts['mine'].pk}/").status_code == 200


def test_the_owner_acknowledges(client, cast):
    alert = open_alert(owner=cast["owner"])
    client.force_login(cast["owner"])
    response = client.post(f"/alerts/{alert.pk}/acknowledge/", follow=True)
    assert "Acknowledged." in response.content.decode()
    alert.refresh_from_db()
    assert alert.status == AlertStatus.ACKNOWLEDGED and alert.acknowledged_by == cast["owner"]
    again = client.post(f"/alerts/{alert.pk}/acknowledge/", follow=True)
    assert "only open alerts can be acknowledged" in again.content.decode()


def test_a_teammate_acts_on_a_project_alert_but_not_on_a_personal_one(client, cast):
    alerts = the_cast_alerts(cast)
    client.force_login(cast["teammate"])
    assert client.post(f"/alerts/{alerts['budget'].pk}/acknowledge/").status_code == 302
    assert client.post(f"/alerts/{alerts['mine'].pk}/acknowledge/").status_code == 404
    assert Alert.objects.get(pk=alerts["mine"].pk).status == AlertStatus.OPEN


def test_only_admins_act_on_health_alerts(client, cast):
    alert = open_alert(kind=AlertKind.GPU_TEMPERATURE)
    client.force_login(cast["owner"])
    assert client.post(f"/alerts/{alert.pk}/snooze/", {"minutes": 60}).status_code == 404
    client.force_login(cast["admin"])
    assert client.post(f"/alerts/{alert.pk}/snooze/", {"minutes": 60}).status_code == 302
    assert Alert.objects.get(pk=alert.pk).snoozed_until is not None


def test_a_snooze_of_an_odd_length_is_refused(client, cast):
    alert = open_alert(owner=cast["owner"])
    client.force_login(cast["owner"])
    for minutes in ("-5", "0", "abc", "99999"):
        response = client.post(f"/alerts/{alert.pk}/snooze/", {"minutes": minutes}, follow=True)
        assert "Choose how long to snooze" in response.content.decode()
    assert Alert.objects.get(pk=alert.pk).snoozed_until is None
    assert alert.events.count() == 1


def test_the_alert_page_shows_history_and_deliveries(client, cast):
    from monitoring.notify.from_events import dispatch_pending

    alert = open_alert(owner=cast["owner"])
    dispatch_pending()
    client.force_login(cast["owner"])
    client.post(f"/alerts/{alert.pk}/snooze/", {"minutes": 240})
    body = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert 'data-event="opened"' in body and 'data-event="snoozed"' in body
    assert "Snoozed by alice until" in body
    assert "In-app" in body and "Email" in body


def test_the_list_filters_by_kind(client, cast):
    the_cast_alerts(cast)
    client.force_login(cast["admin"])
    body = titles(client, "?scope=all&kind=budget")
    assert "vision passed 80 %" in body and "alice idle on gpu-01" not in body
    assert client.get("/alerts/?kind=nonsense").status_code == 200


def test_an_admin_opens_alerts_on_every_open_alert_with_a_mine_filter(client, cast):
    the_cast_alerts(cast)
    client.force_login(cast["admin"])
    body = titles(client)
    assert "Open (4)" in body and "89 C on gpu-03" in body and "bob idle on gpu-02" in body
    mine_only = titles(client, "?scope=mine")
    assert "Open (0)" in mine_only and "89 C on gpu-03" not in mine_only


def test_alert_times_are_in_the_viewers_zone_with_the_zone_named(client, cast):
    alert = the_cast_alerts(cast)["mine"]
    client.force_login(cast["owner"])
    client.cookies["tz"] = "Europe/Berlin"
    local = timezone.localtime(alert.opened_at, ZoneInfo("Europe/Berlin"))
    expected = f"{local:%d %b %H:%M} {local.tzname()}"
    assert expected in titles(client)
    assert f"{local:%d %b %Y %H:%M} {local.tzname()}" in client.get(f"/alerts/{alert.pk}/").content.decode()


def test_an_idle_alert_page_carries_its_evidence_with_the_thresholds(client, cast, gpu, clock):
    from datetime import timedelta

    from monitoring.alerts.findings import Finding
    from monitoring.alerts.lifecycle import open_alerts
    from tests.support.monitoring import T0
    from tests.support.telemetry import process, stream

    stream(gpu, T0 - timedelta(minutes=40), T0, util=0, processes=[process(4242, "alice", started_at=T0)])
    details = {"max_util_pct": 5, "min_memory_mib": 1024, "window_minutes": 30}
    finding = Finding(key="k", kind=AlertKind.IDLE_PROCESS, title="Idle", gpu_id=gpu.pk, details=details)
    alert = open_alerts([finding], T0 - timedelta(minutes=2))[0]
    client.force_login(cast["owner"])
    Alert.objects.filter(pk=alert.pk).update(owner=cast["owner"])
    body = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert 'id="evidence-chart"' in body and "Times in UTC" in body
    data = json.loads(body.split('<script id="evidence-data" type="application/json">')[1].split("</script>")[0])
    assert data["thresholds"] == {"util_gpu": 5.0, "mem_used_mib": 1024.0}
    assert len(data["ts"]) == 32 * 6 and set(data["series"]["util_gpu"]) == {0.0}
    assert data["start"] == "2026-11-10 11:28:00" and data["end"] == "2026-11-10 12:00:00"
