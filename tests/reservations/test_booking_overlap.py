"""PostgreSQL refuses two active bookings of one GPU for one moment; touching ends are fine."""

import pytest
from django.db import IntegrityError, transaction

from reservations.booking import BookingConflict
from reservations.choices import ReservationStatus
from reservations.models import Reservation
from tests.support.reservations import at, booked

# The existing booking is [10, 20); each case is a second booking of the same GPU.
MATRIX = {
    "inside": (12, 18, False),
    "across the start": (5, 12, False),
    "across the end": (18, 25, False),
    "equal": (10, 20, False),
    "enclosing": (5, 25, False),
    "touching before": (5, 10, True),
    "touching after": (20, 25, True),
    "well before": (1, 5, True),
}


def insert_directly(user, gpu, start_h, end_h):
    with transaction.atomic():
        Reservation.objects.create(user=user, gpu=gpu, start=at(start_h), end=at(end_h))


@pytest.mark.parametrize("case", MATRIX, ids=str)
def test_the_database_itself_decides_each_overlap_case(cast, fleet_gpus, case):
    start_h, end_h, allowed = MATRIX[case]
    gpu = fleet_gpus[0]
    insert_directly(cast["owner"], gpu, 10, 20)
    if allowed:
        insert_directly(cast["teammate"], gpu, start_h, end_h)
        assert Reservation.objects.filter(gpu=gpu).count() == 2
    else:
        with pytest.raises(IntegrityError, match="reservation_no_overlap"):
            insert_directly(cast["teammate"], gpu, start_h, end_h)
        assert Reservation.objects.filter(gpu=gpu).count() == 1


@pytest.mark.parametrize("case", MATRIX, ids=str)
def test_the_booking_service_refuses_each_overlap_with_who_and_until_when(cast, fleet_gpus, case):
    start_h, end_h, allowed = MATRIX[case]
    gpu = fleet_gpus[0]
    booked(cast["owner"], [gpu], 10, 20)
    if allowed:
        assert booked(cast["teammate"], [gpu], start_h, end_h)
    else:
        with pytest.raises(BookingConflict, match=r"GPU gpu-a100-01:0 is taken by alice until"):
            booked(cast["teammate"], [gpu], start_h, end_h)
        assert Reservation.objects.filter(gpu=gpu).count() == 1


def test_it_refuses_an_overlapping_booking_of_your_own(cast, fleet_gpus):
    booked(cast["owner"], fleet_gpus[:1], 10, 20)
    with pytest.raises(BookingConflict, match="taken by you until"):
        booked(cast["owner"], fleet_gpus[:1], 15, 25)


def test_other_gpus_of_the_same_node_can_be_booked_for_the_same_time(cast, fleet_gpus):
    booked(cast["owner"], fleet_gpus[:1], 10, 20)
    assert booked(cast["teammate"], fleet_gpus[1:2], 10, 20)


@pytest.mark.parametrize(
    "status", [ReservationStatus.CANCELLED, ReservationStatus.RELEASED, ReservationStatus.PREEMPTED]
)
def test_a_booking_that_is_no_longer_active_does_not_block_the_slot(cast, fleet_gpus, status):
    rows = booked(cast["owner"], fleet_gpus[:1], 10, 20)
    Reservation.objects.filter(pk=rows[0].pk).update(status=status)
    assert booked(cast["teammate"], fleet_gpus[:1], 10, 20)


def test_a_refused_multi_gpu_booking_stores_none_of_its_gpus(cast, fleet_gpus):
    booked(cast["owner"], fleet_gpus[2:3], 10, 20)
    with pytest.raises(BookingConflict):
        booked(cast["teammate"], fleet_gpus[:4], 0, 12)
    assert Reservation.objects.filter(user=cast["teammate"]).count() == 0


def test_a_booking_must_end_after_it_starts_even_in_the_database(cast, fleet_gpus):
    with pytest.raises(IntegrityError, match="reservation_starts_before_it_ends"):
        insert_directly(cast["owner"], fleet_gpus[0], 10, 10)


def test_the_gpus_of_one_booking_share_its_id(cast, fleet_gpus):
    rows = booked(cast["owner"], fleet_gpus[:3], 1, 2)
    assert len({row.booking for row in rows}) == 1
    assert Reservation.objects.filter(booking=rows[0].booking).count() == 3
