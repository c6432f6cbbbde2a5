"""The timeline page: GPUs × days, bookings coloured by user or project, the free slots left light."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from reservations.timeline import colour_for
from tests.support.reservations import booked

URL = reverse("fleet:reservations")


@pytest.fixture
def alice(client, cast):
    client.force_login(cast["owner"])
    return client


def test_it_shows_every_gpu_with_its_bookings(alice, cast, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[:1], 1, 5, purpose="LLM eval", project=cast["project"])
    body = alice.get(URL).content.decode()
    assert body.count('class="tl-track" data-gpu=') == len(fleet_gpus)
    assert "gpu-t4-01:1" in body
    assert body.count('class="tl-bar') == 1 and "LLM eval" in body
    assert f'data-css-background="{colour_for("bob")}"' in body


def test_bookings_can_be_coloured_by_project(alice, cast, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[:1], 1, 5, project=cast["project"])
    body = alice.get(URL, {"colour": "project"}).content.decode()
    assert f'data-css-background="{colour_for("vision")}"' in body


def test_my_own_bookings_stand_out(alice, cast, fleet_gpus):
    booked(cast["owner"], fleet_gpus[:1], 1, 5)
    assert 'class="tl-bar mine"' in alice.get(URL).content.decode()


def test_it_filters_by_model_and_shows_four_weeks(alice, cast, fleet_gpus):
    body = alice.get(URL, {"model": fleet_gpus[-1].model.pk, "days": 28}).content.decode()
    assert body.count('class="tl-track" data-gpu=') == 2
    assert body.count('class="tl-day"') == 28


def test_a_day_without_bookings_says_every_gpu_is_free(alice, fleet_gpus):
    assert "every GPU is free" in alice.get(URL).content.decode()


def test_an_empty_fleet_has_a_clear_empty_state(alice, db):
    assert "No GPUs match." in alice.get(URL).content.decode()


def test_bad_filters_get_an_error_and_the_default_view(alice, fleet_gpus):
    response = alice.get(URL, {"days": "365", "start": "someday"})
    assert response.status_code == 400
    body = response.content.decode()
    assert "Select a valid choice." in body and "Enter a valid date." in body
    assert timezone.localdate().strftime("%a %-d %b") in body


def test_the_timeline_api_lists_each_gpu_with_its_bookings(alice, cast, fleet_gpus):
    from tests.support.reservations import at

    booked(cast["teammate"], fleet_gpus[:1], 1, 5)
    response = alice.get(reverse("fleet:api-timeline"), {"start": at(0).isoformat(), "end": at(24).isoformat()})
    rows = response.json()["results"]
    assert len(rows) == len(fleet_gpus)
    first = next(r for r in rows if r["gpu"]["id"] == fleet_gpus[0].pk)
    assert [b["user"] for b in first["bookings"]] == ["bob"]


def test_earlier_and_later_keep_the_filters(alice, fleet_gpus):
    body = alice.get(URL, {"model": fleet_gpus[0].model.pk, "colour": "project", "days": 3}).content.decode()
    later = (timezone.localdate() + timedelta(days=3)).strftime("%Y-%m-%d")
    assert f"?model={fleet_gpus[0].model.pk}&amp;colour=project&amp;days=3&amp;start={later}" in body
