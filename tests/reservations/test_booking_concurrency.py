"""32 researchers try to book the same GPU slot at the same moment, each on its own connection."""

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, OperationalError, connection

from reservations.booking import BookingConflict, BookingError, BookingRequest, book
from reservations.models import Reservation
from tests.support.reservations import at

pytestmark = pytest.mark.django_db(transaction=True)
BOOKERS = 32
DEADLOCK_DETECTED = "40P01"  # PostgreSQL's SQLSTATE


def race(bookers, action) -> list:
    """Run `action(user)` for every booker at once (a barrier); each thread has its own database connection."""
    barrier = threading.Barrier(len(bookers))
    outcomes = [None] * len(bookers)

    def attempt(i, user):
        try:
            barrier.wait()
            outcomes[i] = action(user)
        except (BookingError, IntegrityError) as exc:
            outcomes[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=attempt, args=(i, user)) for i, user in enumerate(bookers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return outcomes


def researchers(n):
    User = get_user_model()
    return [User.objects.create_user(f"researcher{i:02}", f"r{i}@example.org") for i in range(n)]


def test_exactly_one_of_32_simultaneous_bookings_of_one_slot_succeeds(fleet_gpus):
    gpu = fleet_gpus[0]
    outcomes = race(
        researchers(BOOKERS), lambda user: book(BookingRequest(user=user, gpus=[gpu], start=at(1), end=at(3)))
    )
    winners = [o for o in outcomes if isinstance(o, list)]
    losers = [o for o in outcomes if isinstance(o, BookingConflict)]
    assert len(winners) == 1 and len(losers) == BOOKERS - 1
    winner = winners[0][0].user.username
    for loser in losers:
        assert f"GPU gpu-a100-01:0 is taken by {winner} until" in loser.message
    assert Reservation.objects.filter(gpu=gpu).count() == 1


def test_postgresql_alone_lets_one_of_32_simultaneous_raw_inserts_commit(fleet_gpus):
    """Without our per-GPU lock, PostgreSQL still commits exactly one; it refuses the others either with the
    exclusion constraint or, when their uncommitted rows wait on each other, as a deadlock."""
    gpu = fleet_gpus[0]

    def insert(user):
        try:
            return Reservation.objects.create(user=user, gpu=gpu, start=at(1), end=at(3))
        except OperationalError as exc:
            return exc

    outcomes = race(researchers(BOOKERS), insert)
    assert sum(isinstance(o, Reservation) for o in outcomes) == 1
    refused = [o for o in outcomes if not isinstance(o, Reservation)]
    assert all(
        (isinstance(o, IntegrityError) and "reservation_no_overlap" in str(o))
        or (isinstance(o, OperationalError) and getattr(o.__cause__, "sqlstate", None) == DEADLOCK_DETECTED)
        for o in refused
    ), [str(o) for o in refused]
    assert len(refused) == BOOKERS - 1
    assert Reservation.objects.filter(gpu=gpu).count() == 1


def test_simultaneous_bookings_of_overlapping_windows_leave_no_overlap(fleet_gpus):
    gpu = fleet_gpus[0]
    people = researchers(BOOKERS)
    # 3-hour windows starting at hours 0..7: neighbours overlap, so several can win but none may overlap.
    starts = {user.pk: i % 8 for i, user in enumerate(people)}

    def attempt(user):
        return book(BookingRequest(user=user, gpus=[gpu], start=at(starts[user.pk]), end=at(starts[user.pk] + 3)))

    outcomes = race(people, attempt)
    assert all(isinstance(o, (list, BookingConflict)) for o in outcomes)
    rows = list(Reservation.objects.filter(gpu=gpu).order_by("start"))
    assert len(rows) >= 2
    for earlier, later in zip(rows, rows[1:], strict=False):
        assert earlier.end <= later.start


def test_simultaneous_picks_of_k_gpus_of_a_model_share_the_fleet_without_overlap(fleet_gpus):
    a100 = fleet_gpus[0].model
    outcomes = race(
        researchers(8), lambda user: book(BookingRequest(user=user, model=a100, count=2, start=at(1), end=at(3)))
    )
    winners = [o for o in outcomes if isinstance(o, list)]
    # Six A100s: three bookings of two fit, whatever the order; the others are told why not.
    assert len(winners) == 3
    booked_gpus = [row.gpu_id for rows in winners for row in rows]
    assert len(booked_gpus) == len(set(booked_gpus)) == 6
    for loser in [o for o in outcomes if isinstance(o, BookingError)]:
        assert "not free" in loser.message or "taken by" in loser.message
