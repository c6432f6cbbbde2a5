"""Bookings: an idle booked GPU alerts its holder, squatting alerts both sides, notices reach the inbox."""

from datetime import timedelta

import pytest

from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind, AlertStatus
from monitoring.alerts.models import Alert
from monitoring.notify.choices import TransportKind
from monitoring.notify.from_events import dispatch_pending
from monitoring.notify.models import Notification
from reservations.choices import ReservationEventKind, ReservationStatus
from reservations.events import record_event
from reservations.models import Reservation
from reservations.watch import watch_reservations
from tests.support.monitoring import T0
from tests.support.telemetry import process, roll_up, stream

MIN = timedelta(minutes=1)


@pytest.fixture
def booking(cast, gpu):
    """alice holds gpu-01:0 from T0 for four hours, for project vision."""
    return Reservation.objects.create(
        user=cast["owner"], project=cast["project"], gpu=gpu, start=T0, end=T0 + timedelta(hours=4)
    )


def evaluate_at(clock, moment):
    clock.move_to(moment)
    roll_up(moment)
    engine.evaluate()


def alerts(kind):
    return Alert.objects.filter(kind=kind).order_by("id")


def test_a_booked_gpu_left_idle_alerts_its_holder(cast, gpu, booking, clock):
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[])
    evaluate_at(clock, T0 + 31 * MIN)
    alert = alerts(AlertKind.BOOKING_IDLE).get()
    assert (alert.owner, alert.project, alert.gpu) == (cast["owner"], cast["project"], gpu)
    assert "Shorten or cancel the booking" in alert.message


def test_the_first_half_hour_of_a_booking_raises_nothing(cast, gpu, booking, clock):
    stream(gpu, T0 - 10 * MIN, T0 + 29 * MIN, util=0, processes=[])
    evaluate_at(clock, T0 + 29 * MIN)
    assert not alerts(AlertKind.BOOKING_IDLE).exists()


def test_a_holder_idle_process_is_left_to_the_idle_process_rule(cast, gpu, booking, clock):
    kernel = process(7, "alice", mem_used_mib=8000, started_at=T0 - timedelta(hours=1))
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[kernel])
    evaluate_at(clock, T0 + 31 * MIN)
    assert not alerts(AlertKind.BOOKING_IDLE).exists()
    alert = alerts(AlertKind.IDLE_PROCESS).get()
    assert alert.project == cast["project"]


def test_the_alert_resolves_when_the_gpu_works_or_the_booking_ends(cast, gpu, booking, clock):
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[])
    evaluate_at(clock, T0 + 31 * MIN)
    stream(gpu, T0 + 31 * MIN, T0 + 32 * MIN, util=70, processes=[process(8, "alice")])
    evaluate_at(clock, T0 + 32 * MIN)
    assert alerts(AlertKind.BOOKING_IDLE).get().resolution == "The booked GPU is in use again."

    stream(gpu, T0 + 32 * MIN, T0 + 70 * MIN, util=0, processes=[])
    evaluate_at(clock, T0 + 70 * MIN)
    assert alerts(AlertKind.BOOKING_IDLE).filter(status=AlertStatus.OPEN).count() == 1
    Reservation.objects.filter(pk=booking.pk).update(status=ReservationStatus.CANCELLED)
    evaluate_at(clock, T0 + 71 * MIN)
    assert alerts(AlertKind.BOOKING_IDLE).last().resolution == "The booking ended."


def test_squatting_alerts_the_squatter_and_the_holder(cast, gpu, booking, clock):
    # bob is in the booking's project, so his processes count as use; eve is not.
    stream(gpu, T0, T0 + 2 * MIN, util=95, processes=[process(98, "bob"), process(99, "eve", mem_used_mib=20000)])
    clock.move_to(T0 + 2 * MIN)
    watch_reservations()
    engine.evaluate()
    squatter, holder = alerts(AlertKind.SQUATTING)
    assert squatter.owner == cast["outsider"] and "booked by alice" in squatter.title
    assert holder.owner == cast["owner"] and holder.title.startswith("eve is using GPU")

    stream(gpu, T0 + 2 * MIN, T0 + 3 * MIN, util=0, processes=[])
    clock.move_to(T0 + 6 * MIN)
    watch_reservations()
    engine.evaluate()
    assert set(alerts(AlertKind.SQUATTING).values_list("status", flat=True)) == {AlertStatus.RESOLVED}


def test_a_squatter_nobody_knows_goes_to_the_admins(cast, gpu, booking, clock):
    stream(gpu, T0, T0 + 2 * MIN, util=95, processes=[process(99, "mallory")])
    clock.move_to(T0 + 2 * MIN)
    watch_reservations()
    engine.evaluate()
    dispatch_pending()
    squatter = alerts(AlertKind.SQUATTING).first()
    assert squatter.owner is None
    assert set(Notification.objects.filter(event__alert=squatter).values_list("user__username", flat=True)) == {"root"}


def test_a_preempted_booking_reaches_the_notification_center_without_a_second_email(cast, booking, clock):
    record_event(ReservationEventKind.PREEMPTED, booking, "root preempted your booking of gpu-01:0 for a deadline.")
    engine.evaluate()
    engine.evaluate()
    dispatch_pending()
    notice = alerts(AlertKind.BOOKING_NOTICE).get()
    assert notice.status == AlertStatus.RESOLVED and notice.owner == cast["owner"]
    told = Notification.objects.filter(event__alert=notice)
    assert list(told.values_list("transport", "event__kind")) == [(TransportKind.IN_APP, "opened")]
