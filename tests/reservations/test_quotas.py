"""Weekly GPU-hour limits, the longest booking, deadline windows that tighten them, and admin overrides."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from fleet.localtime import week_start
from reservations.booking import BookingError, BookingRequest, NotAllowed, book, change_window
from reservations.models import DeadlineWindow, QuotaPolicy, Reservation

# A Monday morning, so that a whole test fits inside one calendar week.
MONDAY = "2031-03-03 08:00:00+00:00"


@pytest.fixture
def monday():
    with time_machine.travel(MONDAY, tick=False):
        yield timezone.now()


def limit(**fields):
    QuotaPolicy.objects.update_or_create(pk=1, defaults=fields)


def book_hours(user, gpus, start, hours=0, minutes=0, **extra):
    request = BookingRequest(user=user, gpus=gpus, start=start, end=start + timedelta(hours=hours, minutes=minutes))
    for key, value in extra.items():
        setattr(request, key, value)
    return book(request)


def test_a_booking_exactly_at_the_weekly_limit_is_accepted(cast, fleet_gpus, monday):
    limit(user_gpu_hours_per_week=10)
    book_hours(cast["owner"], fleet_gpus[:2], monday + timedelta(hours=1), hours=4)  # 8 GPU-hours
    assert book_hours(cast["owner"], fleet_gpus[:1], monday + timedelta(hours=6), hours=2)  # 10


def test_one_minute_over_the_weekly_limit_is_refused_and_nothing_is_stored(cast, fleet_gpus, monday):
    limit(user_gpu_hours_per_week=10)
    book_hours(cast["owner"], fleet_gpus[:2], monday + timedelta(hours=1), hours=4)
    with pytest.raises(BookingError, match=r"bring you to 10.02 hours of 10 GPU-hours in the week of Mon 3 Mar"):
        book_hours(cast["owner"], fleet_gpus[:1], monday + timedelta(hours=6), hours=2, minutes=1)
    assert Reservation.objects.count() == 2


def test_the_project_limit_counts_every_members_bookings(cast, fleet_gpus, monday):
    limit(project_gpu_hours_per_week=6)
    project = cast["project"]
    book_hours(cast["owner"], fleet_gpus[:1], monday + timedelta(hours=1), hours=4, project=project)
    with pytest.raises(BookingError, match="project vision to 7 hours of 6"):
        book_hours(cast["teammate"], fleet_gpus[1:2], monday + timedelta(hours=1), hours=3, project=project)
    assert book_hours(cast["teammate"], fleet_gpus[1:2], monday + timedelta(hours=1), hours=3)


def test_cancelled_bookings_free_their_hours(cast, fleet_gpus, monday):
    limit(user_gpu_hours_per_week=4)
    rows = book_hours(cast["owner"], fleet_gpus[:1], monday + timedelta(hours=1), hours=4)
    Reservation.objects.filter(booking=rows[0].booking).update(status="cancelled")
    assert book_hours(cast["owner"], fleet_gpus[:1], monday + timedelta(hours=1), hours=4)


def test_a_booking_across_two_weeks_counts_in_each_week_apart(cast, fleet_gpus, monday):
    limit(user_gpu_hours_per_week=24, longest_booking_hours=None)
    sunday_noon = week_start(monday) + timedelta(days=6, hours=12)
    # 36 hours from Sunday noon: 12 in this week, 24 in the next; each week is within its limit.
    assert book_hours(cast["owner"], fleet_gpus[:1], sunday_noon, hours=36)
    with pytest.raises(BookingError, match="in the week of Mon 10 Mar"):
        book_hours(cast["owner"], fleet_gpus[1:2], sunday_noon + timedelta(hours=12), hours=1)


def test_the_longest_booking_is_enforced_to_the_minute(cast, fleet_gpus, monday):
    limit(longest_booking_hours=8)
    assert book_hours(cast["owner"], fleet_gpus[:1], monday + timedelta(hours=1), hours=8)
    with pytest.raises(BookingError, match="at most 8 hours; this one lasts 8.02 hours"):
        book_hours(cast["owner"], fleet_gpus[1:2], monday + timedelta(hours=1), hours=8, minutes=1)


def test_extending_past_the_weekly_limit_is_refused_and_the_booking_kept(cast, fleet_gpus, monday):
    limit(user_gpu_hours_per_week=5)
    rows = book_hours(cast["owner"], fleet_gpus[:1], monday + timedelta(hours=1), hours=4)
    change_window(rows[0].booking, cast["owner"], end=rows[0].end + timedelta(hours=1))
    with pytest.raises(BookingError, match="6 hours of 5"):
        change_window(rows[0].booking, cast["owner"], end=rows[0].end + timedelta(hours=2))
    assert Reservation.objects.get().end == rows[0].end + timedelta(hours=1)


@pytest.fixture
def neurips(monday):
    # The window opens 14 days before the deadline: Monday 10 March 08:00 UTC.
    return DeadlineWindow.objects.create(
        name="NeurIPS 2031",
        deadline=monday + timedelta(days=21),
        window_days=14,
        user_gpu_hours_per_week=4,
        longest_booking_hours=2,
    )


def test_inside_a_deadline_window_a_booking_must_name_its_deadline(cast, fleet_gpus, monday, neurips):
    start = neurips.opens + timedelta(hours=1)
    with pytest.raises(BookingError, match="NeurIPS 2031 deadline window: name the deadline") as refused:
        book_hours(cast["owner"], fleet_gpus[:1], start, hours=1)
    assert refused.value.field == "deadline_name"
    assert book_hours(cast["owner"], fleet_gpus[:1], start, hours=1, deadline_name="NeurIPS 2031")


def test_limits_tighten_inside_a_deadline_window(cast, fleet_gpus, monday, neurips):
    outside = monday + timedelta(hours=1)
    assert book_hours(cast["owner"], fleet_gpus[:1], outside, hours=3)
    inside = neurips.opens + timedelta(hours=1)
    with pytest.raises(BookingError, match=r"at most 2 hours \(NeurIPS 2031 deadline window\)"):
        book_hours(cast["owner"], fleet_gpus[:1], inside, hours=3, deadline_name="NeurIPS 2031")
    book_hours(cast["owner"], fleet_gpus[:2], inside, hours=2, deadline_name="NeurIPS 2031")  # 4 of 4
    with pytest.raises(BookingError, match="5 hours of 4 GPU-hours"):
        book_hours(cast["owner"], fleet_gpus[2:3], inside + timedelta(hours=3), hours=1, deadline_name="NeurIPS")


def test_a_booking_that_only_reaches_into_the_window_is_tightened_too(cast, fleet_gpus, monday, neurips):
    with pytest.raises(BookingError, match="deadline window"):
        book_hours(cast["owner"], fleet_gpus[:1], neurips.opens - timedelta(hours=1), hours=2)


def test_an_admin_may_override_quotas(cast, fleet_gpus, monday, neurips):
    limit(user_gpu_hours_per_week=1)
    assert book_hours(cast["admin"], fleet_gpus[:4], monday + timedelta(hours=1), hours=5, override_quota=True)


def test_a_researcher_may_not_override_quotas(cast, fleet_gpus, monday):
    with pytest.raises(NotAllowed):
        book_hours(cast["owner"], fleet_gpus[:1], monday + timedelta(hours=1), hours=1, override_quota=True)
    assert not Reservation.objects.exists()


def test_bookings_may_not_start_too_far_ahead(cast, fleet_gpus, monday):
    limit(furthest_ahead_days=30)
    with pytest.raises(BookingError, match="at most 30 days ahead"):
        book_hours(cast["owner"], fleet_gpus[:1], monday + timedelta(days=31), hours=1)
