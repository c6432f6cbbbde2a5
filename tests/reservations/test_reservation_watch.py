"""Bookings tied to real use: first use recorded, no-shows released after the grace, squatting recorded."""

from datetime import timedelta

import pytest
import time_machine
from django.core import mail

from inventory.models import GPU, OsAccount
from reservations.models import Reservation, ReservationEvent
from reservations.watch import watch_reservations
from tests.support.gpus import set_states
from tests.support.reservations import at, booked


def report(gpu, *users, when):
    """The ingest writes each GPU's latest state; here we write what an agent would have sent."""
    processes = [{"pid": 4000 + i, "user": user, "name": "python"} for i, user in enumerate(users)]
    set_states(GPU.objects.filter(pk=gpu.pk), processes=processes, last_sample_at=when)


@pytest.fixture
def booking(cast, fleet_gpus):
    """alice holds gpu-a100-01:0 from at(0) to at(4)."""
    return booked(cast["owner"], fleet_gpus[:1], 0, 4)[0]


def watch_at(moment):
    with time_machine.travel(moment, tick=False):
        return watch_reservations()


def test_a_holders_process_records_first_use(booking, fleet_gpus):
    report(fleet_gpus[0], "alice", when=at(0) + timedelta(minutes=5))
    watch_at(at(0) + timedelta(minutes=5))
    assert Reservation.objects.get().first_used_at == at(0) + timedelta(minutes=5)


def test_an_os_account_maps_to_its_researcher(cast, booking, fleet_gpus):
    OsAccount.objects.create(username="asmith", user=cast["owner"])
    report(fleet_gpus[0], "asmith", when=at(0) + timedelta(minutes=5))
    watch_at(at(0) + timedelta(minutes=5))
    assert Reservation.objects.get().first_used_at is not None


def test_a_booking_unused_for_29_minutes_is_kept(booking, fleet_gpus):
    report(fleet_gpus[0], when=at(0) + timedelta(minutes=29))
    assert watch_at(at(0) + timedelta(minutes=29)).released == 0
    assert Reservation.objects.get().status == "active"


def test_a_booking_unused_for_30_minutes_is_released_and_the_holder_told(booking, fleet_gpus):
    report(fleet_gpus[0], when=at(0) + timedelta(minutes=30))
    assert watch_at(at(0) + timedelta(minutes=30)).released == 1
    row = Reservation.objects.get()
    assert row.status == "released" and row.status_changed == at(0) + timedelta(minutes=30)
    event = ReservationEvent.objects.get()
    assert event.kind == "released" and "within 30 minutes" in event.detail
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["alice@example.org"]
    assert "released" in mail.outbox[0].subject


def test_the_grace_is_a_setting(settings, booking, fleet_gpus):
    settings.RESERVATION_NO_SHOW_MINUTES = 10
    report(fleet_gpus[0], when=at(0) + timedelta(minutes=10))
    assert watch_at(at(0) + timedelta(minutes=10)).released == 1


def test_a_released_gpu_can_be_booked_by_someone_else(cast, booking, fleet_gpus):
    report(fleet_gpus[0], when=at(0) + timedelta(minutes=31))
    watch_at(at(0) + timedelta(minutes=31))
    with time_machine.travel(at(0) + timedelta(minutes=32), tick=False):
        assert booked(cast["teammate"], fleet_gpus[:1], 1, 3)


def test_a_booking_used_once_is_never_released(booking, fleet_gpus):
    report(fleet_gpus[0], "alice", when=at(0) + timedelta(minutes=3))
    watch_at(at(0) + timedelta(minutes=3))
    report(fleet_gpus[0], when=at(0) + timedelta(minutes=45))
    watch_at(at(0) + timedelta(minutes=45))
    assert Reservation.objects.get().status == "active"


def test_without_fresh_telemetry_nothing_is_released(booking, fleet_gpus):
    report(fleet_gpus[0], when=at(0) - timedelta(minutes=10))  # the agent went quiet before the start
    assert watch_at(at(0) + timedelta(minutes=40)).released == 0
    assert Reservation.objects.get().status == "active"


def test_a_teammates_process_counts_as_use_of_a_project_booking(cast, fleet_gpus):
    booked(cast["owner"], fleet_gpus[1:2], 0, 4, project=cast["project"])
    report(fleet_gpus[1], "bob", when=at(0) + timedelta(minutes=5))
    report_ = watch_at(at(0) + timedelta(minutes=5))
    assert report_.squatting == [] and Reservation.objects.get().first_used_at is not None


def test_another_users_process_is_recorded_once_as_squatting_and_both_are_told(cast, booking, fleet_gpus):
    report(fleet_gpus[0], "eve", when=at(0) + timedelta(minutes=5))
    assert watch_at(at(0) + timedelta(minutes=5)).squatting == ["eve"]
    report(fleet_gpus[0], "eve", when=at(0) + timedelta(minutes=6))
    assert watch_at(at(0) + timedelta(minutes=6)).squatting == []
    event = ReservationEvent.objects.get()
    assert (event.kind, event.user, event.actor, event.os_user) == ("squatting", cast["owner"], cast["outsider"], "eve")
    assert event.last_seen == at(0) + timedelta(minutes=6)
    assert "eve runs a process (pid 4000) on GPU gpu-a100-01:0, which alice booked until" in event.detail
    assert sorted(m.to[0] for m in mail.outbox) == ["alice@example.org", "eve@example.org"]


def test_an_unknown_os_user_squatting_is_recorded_without_a_researcher(booking, fleet_gpus):
    report(fleet_gpus[0], "nobody42", when=at(0) + timedelta(minutes=5))
    watch_at(at(0) + timedelta(minutes=5))
    event = ReservationEvent.objects.get()
    assert event.actor is None and "OS user nobody42 (no known researcher)" in event.detail


def test_processes_without_a_user_are_nobodys(booking, fleet_gpus):
    set_states(
        GPU.objects.filter(pk=fleet_gpus[0].pk),
        processes=[{"pid": 1, "user": None}, "garbage", {"pid": 2}],
        last_sample_at=at(0) + timedelta(minutes=5),
    )
    watch_at(at(0) + timedelta(minutes=5))
    assert not ReservationEvent.objects.exists() and Reservation.objects.get().first_used_at is None


def test_processes_on_an_unbooked_gpu_are_not_squatting(cast, booking, fleet_gpus):
    report(fleet_gpus[3], "eve", when=at(0) + timedelta(minutes=5))
    watch_at(at(0) + timedelta(minutes=5))
    assert not ReservationEvent.objects.exists()


def test_finished_bookings_are_marked_ended(booking, fleet_gpus):
    report(fleet_gpus[0], "alice", when=at(0) + timedelta(minutes=5))
    watch_at(at(0) + timedelta(minutes=5))
    assert watch_at(at(4)).ended == 1
    assert Reservation.objects.get().status == "ended"


def test_an_email_failure_is_written_on_the_event(settings, booking, fleet_gpus):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2
    report(fleet_gpus[0], when=at(0) + timedelta(minutes=30))
    watch_at(at(0) + timedelta(minutes=30))
    event = ReservationEvent.objects.get()
    assert event.emailed_at is not None and "ConnectionRefusedError" in event.email_error
