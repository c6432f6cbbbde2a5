"""The booking page: book specific GPUs or k of a model; bad input gets a clear error and stores nothing."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from reservations.models import Reservation
from tests.support.reservations import at, booked

URL = reverse("fleet:book")
LOCAL = "%Y-%m-%dT%H:%M"


def form(start, end, **fields):
    return {"start": start.strftime(LOCAL), "end": end.strftime(LOCAL), "tz": "UTC", **fields}


@pytest.fixture
def alice(client, cast):
    client.force_login(cast["owner"])
    return client


def test_the_booking_page_offers_the_gpus(alice, fleet_gpus):
    body = alice.get(URL).content.decode()
    assert "gpu-a100-01:3 · A100 80GB" in body and "gpu-t4-01:1 · T4" in body


def test_the_timeline_link_prefills_the_gpu_and_start(alice, fleet_gpus):
    body = alice.get(URL, {"gpu": fleet_gpus[1].pk, "start": "2031-05-01T09:30:00Z"}).content.decode()
    assert 'value="2031-05-01T09:30"' in body and 'value="2031-05-01T13:30"' in body
    assert f'value="{fleet_gpus[1].pk}" selected' in body


def test_it_books_specific_gpus_and_shows_the_booking(alice, cast, fleet_gpus):
    data = form(at(1), at(3), gpus=[fleet_gpus[0].pk, fleet_gpus[1].pk], purpose="ViT sweep")
    response = alice.post(URL, data, follow=True)
    rows = Reservation.objects.filter(user=cast["owner"]).order_by("gpu_id")
    assert [r.gpu_id for r in rows] == [fleet_gpus[0].pk, fleet_gpus[1].pk]
    assert rows[0].start == at(1) and rows[0].end == at(3) and rows[0].purpose == "ViT sweep"
    assert response.redirect_chain[-1][0] == reverse("fleet:booking", kwargs={"booking": rows[0].booking})
    assert "Booked 2 GPU(s)" in response.content.decode()


def test_it_picks_k_free_gpus_of_a_model_on_one_node(alice, cast, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[:1], 0, 5)  # gpu-a100-01 has 3 free, gpu-a100-02 has 2
    a100 = fleet_gpus[0].model
    alice.post(URL, form(at(1), at(3), model=a100.pk, count=2, same_node="on"))
    picked = Reservation.objects.filter(user=cast["owner"])
    # Best fit: the node with just enough free GPUs, so the bigger block stays whole.
    assert {r.gpu.node.hostname for r in picked} == {"gpu-a100-02"} and picked.count() == 2


def test_it_books_for_the_current_hour_when_the_start_is_a_minute_ago(alice, cast, fleet_gpus):
    now = timezone.now()
    alice.post(URL, form(now - timedelta(minutes=1), now + timedelta(hours=1), gpus=[fleet_gpus[0].pk]))
    row = Reservation.objects.get(user=cast["owner"])
    assert abs((row.start - now).total_seconds()) < 60


BAD_INPUT = {
    "end before start": (lambda g: form(at(3), at(1), gpus=[g[0].pk]), "The end must be after the start."),
    "start in the past": (
        lambda g: form(at(-30), at(1), gpus=[g[0].pk]),
        "is in the past.",
    ),
    "unknown GPU": (lambda g: form(at(1), at(2), gpus=[999999]), "Select a valid choice. 999999 is not one"),
    "no GPUs at all": (lambda g: form(at(1), at(2)), "Choose GPUs, or a GPU model and how many."),
    "more GPUs than exist": (
        lambda g: form(at(1), at(2), model=g[0].model.pk, count=7),
        "The fleet has 6 bookable A100 80GB GPU(s); you asked for 7.",
    ),
    "beyond the longest booking": (
        lambda g: form(at(1), at(1) + timedelta(days=8), gpus=[g[0].pk]),
        "A booking may last at most 168 hours",
    ),
    "not a time": (lambda g: {"start": "tomorrow-ish", "end": "x", "gpus": [g[0].pk]}, "Enter a valid date/time."),
    "a count of zero": (lambda g: form(at(1), at(2), model=g[0].model.pk, count=0), "greater than or equal to 1"),
}


@pytest.mark.parametrize("case", BAD_INPUT, ids=str)
def test_bad_input_gets_a_clear_error_and_stores_nothing(alice, fleet_gpus, case):
    data, message = BAD_INPUT[case]
    response = alice.post(URL, data(fleet_gpus))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Reservation.objects.exists()


def test_more_gpus_than_are_free_says_how_many_are(alice, cast, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[:5], 0, 5)
    response = alice.post(URL, form(at(1), at(2), model=fleet_gpus[0].model.pk, count=2))
    assert response.status_code == 400
    assert "(only 1 are)" in response.content.decode()
    assert not Reservation.objects.filter(user=cast["owner"]).exists()


def test_a_taken_slot_names_its_holder_and_until_when(alice, cast, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[:1], 0, 5)
    response = alice.post(URL, form(at(1), at(2), gpus=[fleet_gpus[0].pk]))
    assert response.status_code == 400
    assert "GPU gpu-a100-01:0 is taken by bob until" in response.content.decode()


def test_a_project_must_be_one_of_yours(alice, cast, fleet_gpus):
    from inventory.models import Project

    other = Project.objects.create(name="language")
    response = alice.post(URL, form(at(1), at(2), gpus=[fleet_gpus[0].pk], project=other.pk))
    assert response.status_code == 400
    assert not Reservation.objects.exists()


def test_a_researcher_cannot_book_for_someone_else(alice, cast, fleet_gpus):
    alice.post(URL, form(at(1), at(2), gpus=[fleet_gpus[0].pk], user=cast["teammate"].pk))
    assert Reservation.objects.get().user == cast["owner"]


def test_an_admin_can_book_for_a_researcher_and_preempt_what_is_in_the_way(client, cast, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[:1], 0, 5)
    client.force_login(cast["admin"])
    data = form(at(1), at(2), gpus=[fleet_gpus[0].pk], user=cast["owner"].pk, preempt="on")
    response = client.post(URL, data)
    assert response.status_code == 302
    assert Reservation.objects.get(status="active").user == cast["owner"]
    assert Reservation.objects.get(user=cast["teammate"]).status == "preempted"
