"""Find k GPUs of a model for h hours, soonest, and book them with one click."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from reservations.finder import find_slots
from reservations.models import Reservation
from tests.support.reservations import at, booked


def test_with_everything_free_the_soonest_slot_starts_within_a_minute(cast, fleet_gpus):
    slot = find_slots(fleet_gpus[0].model, 4, 2, timezone.now())[0]
    assert slot.start - timezone.now() <= timedelta(minutes=1)
    assert slot.nodes == ["gpu-a100-01"] and len(slot.gpus) == 4


def test_the_soonest_slot_starts_when_enough_gpus_come_free(cast, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[:4], 0, 5)  # gpu-a100-01 busy until at(5)
    now = timezone.now()
    # Two A100s are free now (the next minute) on gpu-a100-02; four on one node only from at(5).
    next_minute = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
    assert find_slots(fleet_gpus[0].model, 2, 3, now, same_node=True)[0].start == next_minute
    slot = find_slots(fleet_gpus[0].model, 4, 3, now, same_node=True)[0]
    assert slot.start == at(5) and slot.nodes == ["gpu-a100-01"]


def test_a_gap_too_short_is_skipped(cast, fleet_gpus):
    t4 = fleet_gpus[-1].model
    booked(cast["teammate"], fleet_gpus[-2:], 0, 2)
    booked(cast["teammate"], fleet_gpus[-2:], 3, 6)
    slots = find_slots(t4, 2, 2, at(0) + timedelta(minutes=1))
    assert slots[0].start == at(6)


def test_more_gpus_than_exist_find_nothing(cast, fleet_gpus):
    assert find_slots(fleet_gpus[-1].model, 3, 1, timezone.now()) == []


@pytest.fixture
def alice(client, cast):
    client.force_login(cast["owner"])
    return client


def test_the_finder_page_books_a_slot_with_one_click(alice, cast, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[:4], 0, 5)
    query = {"model": fleet_gpus[0].model.pk, "count": 4, "hours": "2", "same_node": "on", "purpose": "ablation"}
    body = alice.get(reverse("fleet:find"), query).content.decode()
    assert "Book these" in body
    form = body.split('action="/reservations/book/"')[1].split("</form>")[0]
    data = {"gpus": [], "start": "", "end": "", "purpose": "", "deadline_name": ""}
    for chunk in form.split("<input ")[1:]:
        name = chunk.split('name="')[1].split('"')[0]
        value = chunk.split('value="')[1].split('"')[0]
        data[name] = data[name] + [value] if name == "gpus" else value
    response = alice.post(reverse("fleet:book"), data)
    assert response.status_code == 302, (data, response.content.decode().split('role="alert"')[-1][:300])
    rows = Reservation.objects.filter(user=cast["owner"])
    assert rows.count() == 4 and {r.start for r in rows} == {at(5)} and {r.end for r in rows} == {at(7)}
    assert rows[0].purpose == "ablation"


def test_the_finder_explains_when_nothing_fits(alice, fleet_gpus):
    body = alice.get(reverse("fleet:find"), {"model": fleet_gpus[-1].model.pk, "count": 5, "hours": 1}).content
    assert "does not have 5 bookable T4 GPU(s)" in body.decode()


def test_the_finder_refuses_nonsense(alice, fleet_gpus):
    response = alice.get(reverse("fleet:find"), {"model": 999, "count": -1, "hours": "forever"})
    assert response.status_code == 400
    assert "Select a valid choice." in response.content.decode()
