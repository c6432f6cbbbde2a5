"""/api/alerts/: the same visibility as the pages, acknowledge and snooze with clear errors."""

import pytest
from rest_framework.test import APIClient

from monitoring.alerts.choices import AlertKind, AlertStatus
from monitoring.alerts.models import Alert
from tests.support.alerts import open_alert


@pytest.fixture
def api():
    return APIClient()


def keys(response) -> set[str]:
    return {a["title"] for a in response.json()["results"]}


def test_a_researcher_lists_only_their_own(api, cast):
    open_alert(owner=cast["owner"], title="mine")
    open_alert(owner=cast["teammate"], title="bob's")
    open_alert(kind=AlertKind.GPU_ECC, title="ecc")
    api.force_authenticate(cast["owner"])
    assert keys(api.get("/api/alerts/?scope=all")) == {"mine"}


def test_an_admin_lists_all(api, cast):
    open_alert(owner=cast["owner"], title="mine")
    open_alert(kind=AlertKind.GPU_ECC, title="ecc")
    api.force_authenticate(cast["admin"])
    assert keys(api.get("/api/alerts/?scope=all")) == {"mine", "ecc"}


def test_an_admin_lists_every_open_alert_by_default_and_narrows_to_their_own(api, cast):
    open_alert(owner=cast["owner"], title="alice's")
    open_alert(kind=AlertKind.GPU_THROTTLING, title="throttling")
    open_alert(owner=cast["admin"], title="root's")
    api.force_authenticate(cast["admin"])
    everything = api.get("/api/alerts/").json()
    assert {a["title"] for a in everything["results"]} == {"alice's", "throttling", "root's"}
    assert everything["count"] == 3
    assert keys(api.get("/api/alerts/?scope=mine")) == {"root's"}


def test_acknowledge_and_snooze(api, cast):
    alert = open_alert(owner=cast["owner"])
    api.force_authenticate(cast["owner"])
    body = api.post(f"/api/alerts/{alert.pk}/acknowledge/").json()
    assert body["status"] == "acknowledged" and body["acknowledged_by"] == "alice"
    body = api.post(f"/api/alerts/{alert.pk}/snooze/", {"minutes": 90}, format="json").json()
    assert body["snoozed_until"] and [e["kind"] for e in body["events"]] == ["opened", "acknowledged", "snoozed"]


@pytest.mark.parametrize("payload", [{"minutes": 0}, {"minutes": -3}, {"minutes": "soon"}, {}, {"minutes": 20000}])
def test_a_bad_snooze_is_a_400_and_changes_nothing(api, cast, payload):
    alert = open_alert(owner=cast["owner"])
    api.force_authenticate(cast["owner"])
    response = api.post(f"/api/alerts/{alert.pk}/snooze/", payload, format="json")
    assert response.status_code == 400 and "minutes" in response.json()["errors"]
    assert Alert.objects.get(pk=alert.pk).snoozed_until is None


def test_acknowledging_twice_is_a_400_with_the_reason(api, cast):
    alert = open_alert(owner=cast["owner"])
    api.force_authenticate(cast["owner"])
    api.post(f"/api/alerts/{alert.pk}/acknowledge/")
    response = api.post(f"/api/alerts/{alert.pk}/acknowledge/")
    assert response.status_code == 400 and "only open alerts" in response.json()["detail"]


def test_someone_else_alert_is_404_and_a_project_alert_of_a_non_member_too(api, cast):
    alert = open_alert(owner=cast["owner"])
    budget = open_alert(project=cast["project"], kind=AlertKind.BUDGET)
    api.force_authenticate(cast["outsider"])
    assert api.post(f"/api/alerts/{alert.pk}/acknowledge/").status_code == 404
    assert api.get(f"/api/alerts/{budget.pk}/").status_code == 404
    assert Alert.objects.get(pk=alert.pk).status == AlertStatus.OPEN


def test_bad_filters_are_400(api, cast):
    api.force_authenticate(cast["owner"])
    assert api.get("/api/alerts/?status=maybe").status_code == 400
    assert api.get("/api/alerts/?kind=fire").status_code == 400


def test_resolved_alerts_are_listed_on_request(api, cast):
    alert = open_alert(owner=cast["owner"], title="old")
    Alert.objects.filter(pk=alert.pk).update(status=AlertStatus.RESOLVED, resolved_at=alert.opened_at)
    api.force_authenticate(cast["owner"])
    assert keys(api.get("/api/alerts/")) == set()
    assert keys(api.get("/api/alerts/?status=resolved")) == {"old"}


def test_the_list_comes_in_pages(api, cast):
    for n in range(3):
        open_alert(owner=cast["owner"], title=f"alert {n}")
    api.force_authenticate(cast["owner"])
    page = api.get("/api/alerts/?limit=2").json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"]
