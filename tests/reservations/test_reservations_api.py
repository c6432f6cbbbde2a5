"""The reservations JSON API: book, list, change, cancel, preempt, holders, finder, quota, events, schema."""

from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from reservations.models import Reservation
from reservations.quotas import limits_for
from tests.support.reservations import api_client, at, booked, token_of

LIST = reverse("fleet:api-reservations")


def api_as(user) -> APIClient:
    return api_client(token_of(user))


def detail(booking) -> str:
    return reverse("fleet:api-booking", kwargs={"booking": booking})


@pytest.fixture
def alice(cast):
    return api_as(cast["owner"])


def test_it_books_gpus_and_answers_with_the_booking(alice, cast, fleet_gpus):
    body = {"gpus": [fleet_gpus[0].pk], "start": at(1).isoformat(), "end": at(3).isoformat(), "purpose": "eval"}
    response = alice.post(LIST, body, format="json")
    assert response.status_code == 201
    data = response.json()
    assert data["user"] == "alice" and data["status"] == "active" and data["gpu_hours"] == 2.0
    assert data["reservations"][0]["gpu"]["node"] == "gpu-a100-01"
    assert Reservation.objects.get().booking.hex == data["id"].replace("-", "")


NEW_BOOKINGS = {
    "named GPUs on two nodes, with a project": lambda gpus: {
        "gpus": [gpus[5].pk, gpus[0].pk, gpus[4].pk],
        "project": "vision",
        "deadline_name": "ICML",
        "deadline_date": "2027-01-28",
    },
    "k GPUs of a model": lambda gpus: {"model": "A100 80GB", "count": 2, "same_node": True},
}


@pytest.mark.parametrize("case", NEW_BOOKINGS, ids=str)
def test_the_reply_to_a_booking_is_what_reading_it_back_gives(alice, fleet_gpus, case):
    body = {**NEW_BOOKINGS[case](fleet_gpus), "start": at(1).isoformat(), "end": at(3).isoformat(), "purpose": "x"}
    response = alice.post(LIST, body, format="json")
    assert response.status_code == 201
    created = response.json()
    assert alice.get(detail(created["id"])).json() == created
    assert len(created["reservations"]) == (len(body["gpus"]) if "gpus" in body else body["count"])


def test_booking_named_gpus_takes_the_same_queries_for_one_gpu_or_six(alice, fleet_gpus):
    # the token, the GPUs (with their nodes and models), the booking itself: nothing per GPU, no read-back
    alice.get(LIST)  # the token's first use records when it was used (once a minute): not part of booking
    for hours, gpus in ((1, fleet_gpus[:1]), (5, fleet_gpus[:6])):
        body = {"gpus": [g.pk for g in gpus], "start": at(hours).isoformat(), "end": at(hours + 1).isoformat()}
        limits_for(at(hours), at(hours + 1))  # the rules are read once per process every few seconds
        with CaptureQueriesContext(connection) as queries:
            assert alice.post(LIST, body, format="json").status_code == 201
        sent = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]  # the test's own transaction
        assert len(sent) == 3 and "fleet_book(" in sent[-1], sent


def test_it_books_k_gpus_of_a_model_by_name(alice, fleet_gpus):
    body = {"model": "A100 80GB", "count": 4, "same_node": True, "start": at(1).isoformat(), "end": at(2).isoformat()}
    data = alice.post(LIST, body, format="json").json()
    assert {r["gpu"]["node"] for r in data["reservations"]} == {"gpu-a100-01"}


BAD = {
    "end before start": ({"gpus": [1], "start": 3, "end": 1}, "end"),
    "unknown GPU": ({"gpus": [999999], "start": 1, "end": 2}, "gpus"),
    "GPU id past any integer column": ({"gpus": [10**20], "start": 1, "end": 2}, "gpus"),
    "negative GPU id": ({"gpus": [-1], "start": 1, "end": 2}, "gpus"),
    "unknown model": ({"model": "Z9000", "count": 1, "start": 1, "end": 2}, "model"),
    "nothing to book": ({"start": 1, "end": 2}, "non_field_errors"),
    "not a time": ({"gpus": [1], "start": "soon", "end": 2}, "start"),
}


@pytest.mark.parametrize("case", BAD, ids=str)
def test_bad_input_is_a_400_with_a_message_and_nothing_stored(alice, fleet_gpus, case):
    body, field = BAD[case]
    body = {k: (at(v).isoformat() if k in ("start", "end") and isinstance(v, int) else v) for k, v in body.items()}
    if body.get("gpus") == [1]:
        body["gpus"] = [fleet_gpus[0].pk]
    response = alice.post(LIST, body, format="json")
    assert response.status_code == 400 and field in response.json()["errors"]
    assert not Reservation.objects.exists()


def test_a_taken_slot_is_a_400_naming_the_holder_with_the_conflicts(alice, cast, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[:1], 0, 5)
    body = {"gpus": [fleet_gpus[0].pk], "start": at(1).isoformat(), "end": at(2).isoformat()}
    response = alice.post(LIST, body, format="json")
    assert response.status_code == 400
    data = response.json()
    assert "GPU gpu-a100-01:0 is taken by bob until" in data["detail"] and "gpus" in data["errors"]
    assert data["conflicts"][0]["user"] == "bob" and data["conflicts"][0]["gpu"] == fleet_gpus[0].pk


def test_more_gpus_than_exist_is_a_400(alice, fleet_gpus):
    body = {"model": "T4", "count": 3, "start": at(1).isoformat(), "end": at(2).isoformat()}
    response = alice.post(LIST, body, format="json")
    assert response.status_code == 400 and "The fleet has 2 bookable T4" in response.json()["detail"]


def test_a_start_in_the_past_and_a_window_too_long_are_400s(alice, fleet_gpus):
    past = {"gpus": [fleet_gpus[0].pk], "start": at(-30).isoformat(), "end": at(1).isoformat()}
    long = {"gpus": [fleet_gpus[0].pk], "start": at(1).isoformat(), "end": at(200).isoformat()}
    assert "in the past" in alice.post(LIST, past, format="json").json()["detail"]
    assert "at most 168 hours" in alice.post(LIST, long, format="json").json()["detail"]
    assert not Reservation.objects.exists()


def test_the_list_shows_only_your_own_bookings(alice, cast, fleet_gpus):
    booked(cast["owner"], fleet_gpus[:1], 1, 2)
    booked(cast["teammate"], fleet_gpus[1:2], 1, 2)
    assert [b["user"] for b in alice.get(LIST).json()["results"]] == ["alice"]
    assert alice.get(LIST, {"user": "all"}).json()["results"][0]["user"] == "alice"


def test_an_admin_lists_everyones_bookings(cast, fleet_gpus):
    booked(cast["owner"], fleet_gpus[:1], 1, 2)
    booked(cast["teammate"], fleet_gpus[1:2], 1, 2)
    listed = api_as(cast["admin"]).get(LIST, {"user": "all"}).json()["results"]
    assert sorted(b["user"] for b in listed) == ["alice", "bob"]


def test_the_holder_extends_and_cancels(alice, cast, fleet_gpus):
    key = booked(cast["owner"], fleet_gpus[:2], 1, 2)[0].booking
    response = alice.patch(detail(key), {"end": at(4).isoformat()}, format="json")
    assert response.status_code == 200 and response.json()["gpu_hours"] == 6.0
    response = alice.delete(detail(key))
    assert response.json()["status"] == "cancelled"


def test_an_empty_change_is_a_400(alice, cast, fleet_gpus):
    key = booked(cast["owner"], fleet_gpus[:1], 1, 2)[0].booking
    assert alice.patch(detail(key), {}, format="json").status_code == 400


@pytest.mark.parametrize("who", ["teammate", "outsider"])
def test_another_researcher_gets_403_and_the_booking_is_unchanged(cast, fleet_gpus, who):
    key = booked(cast["owner"], fleet_gpus[:1], 1, 2)[0].booking
    client = api_as(cast[who])
    assert client.patch(detail(key), {"end": at(5).isoformat()}, format="json").status_code == 403
    assert client.delete(detail(key)).status_code == 403
    assert client.post(reverse("fleet:api-preempt", kwargs={"booking": key})).status_code == 403
    assert set(Reservation.objects.values_list("status", "end")) == {("active", at(2))}


def test_an_admin_preempts_through_the_api(cast, fleet_gpus):
    key = booked(cast["owner"], fleet_gpus[:1], 1, 2)[0].booking
    client = api_as(cast["admin"])
    response = client.post(reverse("fleet:api-preempt", kwargs={"booking": key}), {"reason": "urgent"}, format="json")
    assert response.json()["status"] == "preempted"
    events = api_as(cast["owner"]).get(reverse("fleet:api-events")).json()["results"]
    assert events[0]["kind"] == "preempted" and "urgent" in events[0]["detail"] and events[0]["actor"] == "root"


def test_an_unknown_booking_is_a_404(alice, db):
    assert alice.get(detail("00000000-0000-0000-0000-000000000000")).status_code == 404


def test_holders_say_who_holds_each_gpu_now_and_until_when(alice, cast, fleet_gpus):
    key = booked(cast["teammate"], fleet_gpus[:1], 0, 3, project=cast["project"])[0].booking
    with time_machine.travel(at(1), tick=False):
        holders = alice.get(reverse("fleet:api-holders"), {"gpu": [fleet_gpus[0].pk, fleet_gpus[1].uuid]}).json()[
            "results"
        ]
    assert holders == [
        {
            "gpu": fleet_gpus[0].pk,
            "gpu_uuid": "GPU-gpu-a100-01-0",
            "user": "bob",
            "project": "vision",
            "until": at(3).isoformat().replace("+00:00", "Z"),
            "booking": str(key),
        }
    ]
    assert alice.get(reverse("fleet:api-holders"), {"gpu": "x"}).status_code == 400


def test_the_finder_answers_the_soonest_slots(alice, cast, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[-2:], 0, 5)
    slots = alice.get(reverse("fleet:api-find"), {"model": "T4", "count": 2, "hours": 1}).json()["results"]
    assert slots[0]["start"] == at(5).isoformat().replace("+00:00", "Z") and len(slots[0]["gpus"]) == 2
    assert alice.get(reverse("fleet:api-find"), {"model": "T4", "count": 0, "hours": 1}).status_code == 400


def test_the_quota_shows_this_weeks_hours_against_the_limit(alice, cast, fleet_gpus):
    from reservations.models import QuotaPolicy

    QuotaPolicy.objects.update_or_create(pk=1, defaults={"user_gpu_hours_per_week": 100})
    with time_machine.travel("2031-03-03 08:00:00+00:00", tick=False):
        booked(cast["owner"], fleet_gpus[:2], 0, 2)
        usage = alice.get(reverse("fleet:api-quota")).json()["results"]
    assert usage[0] == {"who": "you", "week_start": "2031-03-03T00:00:00Z", "booked_hours": 4.0, "limit_hours": 100}
    assert usage[1]["who"] == "project vision"


def test_the_schema_documents_the_reservation_endpoints(alice, db):
    schema = alice.get("/api/schema/", {"format": "json"}).json()
    paths = schema["paths"]
    assert {"/api/reservations/", "/api/reservations/{booking}/", "/api/reservations/holders/"} <= set(paths)
    assert "post" in paths["/api/reservations/"] and "patch" in paths["/api/reservations/{booking}/"]


def test_the_api_refuses_anonymous_callers(client, db):
    assert client.get(LIST).status_code in (401, 403)
    assert client.get(detail("00000000-0000-0000-0000-000000000000")).status_code in (401, 403)


def test_times_without_an_offset_are_read_in_the_servers_zone(alice, settings, fleet_gpus):
    settings.TIME_ZONE = "Europe/Berlin"
    body = {"gpus": [fleet_gpus[0].pk], "start": "2031-06-01T10:00", "end": "2031-06-01T12:00"}
    with time_machine.travel("2031-05-30 08:00:00+00:00", tick=False):
        alice.post(LIST, body, format="json")
    row = Reservation.objects.get()
    assert row.start.isoformat() == "2031-06-01T08:00:00+00:00" and row.end - row.start == timedelta(hours=2)
