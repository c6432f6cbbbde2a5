"""One booking's page: the holder extends, shortens and cancels it; others may not; admins may, and preempt."""

import pytest
from django.core import mail
from django.urls import reverse

from reservations.models import Reservation, ReservationEvent
from reservations.watch import watch_reservations
from tests.support.reservations import at, booked


@pytest.fixture
def booking(cast, fleet_gpus):
    return booked(cast["owner"], fleet_gpus[:2], 1, 3)[0].booking


def url(name, booking):
    return reverse(f"fleet:{name}", kwargs={"booking": booking})


def test_the_holder_sees_the_booking_with_its_gpus_and_actions(client, cast, booking):
    client.force_login(cast["owner"])
    body = client.get(url("booking", booking)).content.decode()
    assert "2× A100 80GB" in body and "gpu-a100-01:0" in body and "gpu-a100-01:1" in body
    assert "Set new end" in body and "Cancel booking" in body


def test_someone_else_sees_it_without_actions(client, cast, booking):
    client.force_login(cast["outsider"])
    body = client.get(url("booking", booking)).content.decode()
    assert "alice" in body and "Set new end" not in body and "Preempt" not in body


def test_an_unknown_booking_is_not_found(client, cast, db):
    client.force_login(cast["owner"])
    assert client.get(url("booking", "00000000-0000-0000-0000-000000000000")).status_code == 404


def test_the_holder_extends_by_hours(client, cast, booking):
    client.force_login(cast["owner"])
    response = client.post(url("change-booking", booking), {"extend_hours": "4", "tz": "UTC"})
    assert response.status_code == 302
    assert set(Reservation.objects.values_list("end", flat=True)) == {at(7)}


def test_the_holder_shortens_to_a_new_end(client, cast, booking):
    client.force_login(cast["owner"])
    client.post(url("change-booking", booking), {"end": at(2).strftime("%Y-%m-%dT%H:%M"), "tz": "UTC"})
    assert set(Reservation.objects.values_list("end", flat=True)) == {at(2)}


def test_extending_into_someone_elses_booking_is_refused_with_who_and_until(client, cast, booking, fleet_gpus):
    booked(cast["teammate"], fleet_gpus[1:2], 4, 6)
    client.force_login(cast["owner"])
    response = client.post(url("change-booking", booking), {"extend_hours": "2", "tz": "UTC"})
    assert response.status_code == 400
    assert "GPU gpu-a100-01:1 is taken by bob until" in response.content.decode()
    assert set(Reservation.objects.filter(user=cast["owner"]).values_list("end", flat=True)) == {at(3)}


def test_shortening_to_before_the_start_is_refused(client, cast, booking):
    client.force_login(cast["owner"])
    response = client.post(url("change-booking", booking), {"extend_hours": "-3", "tz": "UTC"})
    assert response.status_code == 400
    assert "The end must be after the start." in response.content.decode()


def test_the_holder_cancels(client, cast, booking):
    client.force_login(cast["owner"])
    client.post(url("cancel-booking", booking))
    assert set(Reservation.objects.values_list("status", flat=True)) == {"cancelled"}


@pytest.mark.parametrize("action", ["change-booking", "cancel-booking", "preempt-booking"])
@pytest.mark.parametrize("who", ["teammate", "outsider"])
def test_another_researcher_cannot_change_the_booking(client, cast, booking, action, who):
    client.force_login(cast[who])
    response = client.post(url(action, booking), {"extend_hours": "1", "tz": "UTC"})
    assert response.status_code == 403
    assert set(Reservation.objects.values_list("status", "end")) == {("active", at(3))}


def test_an_admin_can_change_anyones_booking_and_the_holder_is_told(client, cast, booking):
    client.force_login(cast["admin"])
    client.post(url("change-booking", booking), {"extend_hours": "1", "tz": "UTC"})
    assert set(Reservation.objects.values_list("end", flat=True)) == {at(4)}
    event = ReservationEvent.objects.get()
    assert event.kind == "changed_by_admin" and event.user == cast["owner"] and event.actor == cast["admin"]


def test_an_admin_preempts_and_the_holder_gets_an_event_and_one_email(client, cast, booking):
    client.force_login(cast["admin"])
    client.post(url("preempt-booking", booking), {"reason": "node maintenance"})
    assert set(Reservation.objects.values_list("status", flat=True)) == {"preempted"}
    events = ReservationEvent.objects.filter(kind="preempted", user=cast["owner"])
    assert events.count() == 2 and "node maintenance" in events.first().detail
    watch_reservations()
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["alice@example.org"] and "node maintenance" in mail.outbox[0].body
    watch_reservations()
    assert len(mail.outbox) == 1


def test_a_preempted_slot_is_free_for_others(client, cast, booking, fleet_gpus):
    client.force_login(cast["admin"])
    client.post(url("preempt-booking", booking))
    assert booked(cast["teammate"], fleet_gpus[:2], 1, 3)


def test_cancelling_a_booking_in_progress_ends_it_now(client, cast, fleet_gpus):
    import time_machine

    rows = booked(cast["owner"], fleet_gpus[:1], 1, 3)
    with time_machine.travel(at(2), tick=False):
        client.force_login(cast["owner"])
        client.post(url("cancel-booking", rows[0].booking))
    row = Reservation.objects.get()
    assert row.status == "ended" and row.end == at(2)


def test_my_bookings_lists_current_and_past_and_the_weeks_usage(client, cast, fleet_gpus):
    booked(cast["owner"], fleet_gpus[:2], 1, 3, purpose="ablation")
    client.force_login(cast["owner"])
    body = client.get(reverse("fleet:my-reservations")).content.decode()
    assert "ablation" in body and "2× A100 80GB" in body
    assert "GPU-hours this week" in body and "no limit" in body


def test_my_bookings_has_an_empty_state(client, cast, db):
    client.force_login(cast["owner"])
    assert "No bookings ahead." in client.get(reverse("fleet:my-reservations")).content.decode()


def test_after_a_week_the_booking_is_among_the_past(client, cast, fleet_gpus):
    import time_machine

    booked(cast["owner"], fleet_gpus[:1], 1, 3, purpose="old run")
    with time_machine.travel(at(24 * 7), tick=False):
        client.force_login(cast["owner"])
        body = client.get(reverse("fleet:my-reservations")).content.decode()
    assert "No bookings ahead." in body and "old run" in body


def test_the_change_form_refuses_nonsense(client, cast, booking):
    client.force_login(cast["owner"])
    response = client.post(url("change-booking", booking), {"extend_hours": "lots", "tz": "UTC"})
    assert response.status_code == 400 and "Enter a number." in response.content.decode()
    assert set(Reservation.objects.values_list("end", flat=True)) == {at(3)}
