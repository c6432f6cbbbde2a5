"""Random sequences of book / extend / shorten / cancel never leave an overlap, and agree with a simple model."""

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reservations.booking import BookingError, BookingRequest, book, cancel, change_window
from reservations.choices import ReservationStatus
from reservations.models import Reservation
from tests.support.reservations import at

USERS = ["owner", "teammate", "outsider"]

book_op = st.tuples(
    st.just("book"),
    st.sampled_from(USERS),
    st.lists(st.integers(0, 2), min_size=1, max_size=2, unique=True),
    st.integers(0, 30),
    st.integers(1, 8),
)
extend_op = st.tuples(st.just("extend"), st.integers(0, 20), st.integers(-6, 6).filter(bool))
cancel_op = st.tuples(st.just("cancel"), st.integers(0, 20))
operations = st.lists(st.one_of(book_op, extend_op, cancel_op), min_size=1, max_size=25)


def overlapping_pairs() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT count(*) FROM fleet_reservation a JOIN fleet_reservation b
               ON a.gpu_id = b.gpu_id AND a.id < b.id AND a.start < b."end" AND b.start < a."end"
               WHERE a.status = 'active' AND b.status = 'active'"""
        )
        return cursor.fetchone()[0]


class Model:
    """What the database should hold: active intervals (in hours) per booking."""

    def __init__(self):
        self.bookings = {}  # booking id → (gpu indexes, start, end)
        self.order = []

    def free(self, gpus, start, end, ignore=None) -> bool:
        return not any(
            key != ignore and set(gpus) & set(other) and start < e and s < end
            for key, (other, s, e) in self.bookings.items()
        )


def apply(op, model: Model, cast, gpus):
    if op[0] == "book":
        _, who, indexes, start, length = op
        expected = model.free(indexes, start, start + length)
        request = BookingRequest(
            user=cast[who], gpus=[gpus[i] for i in indexes], start=at(start), end=at(start + length)
        )
        try:
            rows = book(request)
        except BookingError:
            assert not expected, op
            return
        assert expected, op
        model.bookings[rows[0].booking] = (indexes, start, start + length)
        model.order.append(rows[0].booking)
    elif model.order:
        key = model.order[op[1] % len(model.order)]
        indexes, start, end = model.bookings[key]
        owner = Reservation.objects.filter(booking=key).first().user
        if op[0] == "cancel":
            cancel(key, owner)
            del model.bookings[key]
            model.order.remove(key)
            return
        new_end = end + op[2]
        expected = new_end > start and model.free(indexes, start, new_end, ignore=key)
        try:
            change_window(key, owner, end=at(new_end))
        except BookingError:
            assert not expected, op
            return
        assert expected, op
        model.bookings[key] = (indexes, start, new_end)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_random_bookings_never_overlap_in_the_database(cast, fleet_gpus, ops):
    Reservation.objects.all().delete()
    model = Model()
    for op in ops:
        apply(op, model, cast, fleet_gpus)
        assert overlapping_pairs() == 0
    active = Reservation.objects.filter(status=ReservationStatus.ACTIVE)
    assert active.values("booking").distinct().count() == len(model.bookings)


@pytest.mark.parametrize("shift", [-1, 1])
def test_a_shortened_or_extended_booking_keeps_its_gpus_together(cast, fleet_gpus, shift):
    rows = book(BookingRequest(user=cast["owner"], gpus=fleet_gpus[:3], start=at(1), end=at(4)))
    change_window(rows[0].booking, cast["owner"], end=at(4 + shift))
    ends = set(Reservation.objects.filter(booking=rows[0].booking).values_list("end", flat=True))
    assert ends == {at(4 + shift)}
