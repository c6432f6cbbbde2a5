"""Booking free GPUs in one round trip, and what the booker sees after waiting for another's locks."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fleet.localtime import week_start, when
from reservations.booking import BookingConflict, BookingError, BookingRequest, book, conflict_error
from reservations.models import QuotaPolicy, Reservation
from reservations.quotas import QuotaError, check_weekly, limits_for
from tests.support.reservations import at

pytestmark = pytest.mark.django_db(transaction=True)


def request(user, gpus, start_h, end_h, **extra) -> BookingRequest:
    return BookingRequest(user=user, gpus=list(gpus), start=at(start_h), end=at(end_h), **extra)


def test_a_booking_of_free_gpus_is_one_query(cast, fleet_gpus):
    limits_for(at(0), at(1))  # the rules are read once per process every few seconds
    with CaptureQueriesContext(connection) as queries:
        book(request(cast["owner"], fleet_gpus[:2], 1, 3))
    assert len(queries) == 1
    assert Reservation.objects.count() == 2


def test_a_booking_under_a_weekly_limit_is_one_query_too(cast, fleet_gpus):
    QuotaPolicy.objects.update_or_create(pk=1, defaults={"user_gpu_hours_per_week": 100})
    limits_for(at(0), at(1))
    with CaptureQueriesContext(connection) as queries:
        book(request(cast["owner"], fleet_gpus[:1], 1, 3, project=None))
    assert len(queries) == 1


def test_each_row_comes_back_as_stored(cast, fleet_gpus):
    rows = book(request(cast["owner"], fleet_gpus[:3], 1, 3, purpose=" ablations ", deadline_name="ICML"))
    stored = {row.pk: row for row in Reservation.objects.all()}
    assert sorted(stored) == sorted(row.pk for row in rows)
    for row in rows:
        twin = stored[row.pk]
        assert (twin.gpu_id, twin.booking, twin.user_id, twin.start, twin.end) == (
            row.gpu_id,
            rows[0].booking,
            cast["owner"].pk,
            row.start,
            row.end,
        )
        assert (twin.purpose, twin.deadline_name, twin.created) == ("ablations", "ICML", row.created)
    assert [row.gpu for row in rows] == fleet_gpus[:3]


def test_a_booking_inside_a_callers_transaction_that_is_refused_leaves_it_usable(cast, fleet_gpus):
    book(request(cast["teammate"], fleet_gpus[:1], 1, 3))
    with transaction.atomic():
        with pytest.raises(BookingConflict, match="taken by bob"):
            book(request(cast["owner"], fleet_gpus[:1], 2, 4))
        assert book(request(cast["owner"], fleet_gpus[1:2], 2, 4))
    assert Reservation.objects.filter(user=cast["owner"]).count() == 1


def someone_waits_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return cursor.fetchone()[0] > 0


def second_waits_for_first(first, second):
    """Run `first` in an open transaction, start `second` on its own connection, let it queue on the
    locks `first` holds, then commit `first`; return what `second` returned or raised."""
    outcome = {}

    def run_second():
        try:
            outcome["value"] = second()
        except BookingError as exc:
            outcome["value"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run_second)
    with transaction.atomic():
        first()
        thread.start()
        deadline = time.monotonic() + 10
        while not someone_waits_for_a_lock():
            assert time.monotonic() < deadline, "the second booking never queued behind the first"
            time.sleep(0.01)
    thread.join(timeout=30)
    return outcome["value"]


def test_a_booking_that_queued_behind_another_of_the_same_gpu_sees_it_and_is_refused(cast, fleet_gpus):
    outcome = second_waits_for_first(
        lambda: book(request(cast["teammate"], fleet_gpus[:1], 1, 3)),
        lambda: book(request(cast["owner"], fleet_gpus[:1], 2, 4)),
    )
    assert isinstance(outcome, BookingConflict)
    assert "GPU gpu-a100-01:0 is taken by bob until" in outcome.message
    assert Reservation.objects.count() == 1


def test_a_booking_that_queued_behind_an_unlocked_insert_is_refused_by_the_constraint(cast, fleet_gpus):
    # An admin edit or a script takes no advisory lock: only the exclusion constraint stands in the way.
    def second():
        with transaction.atomic():
            try:
                book(request(cast["owner"], fleet_gpus[:1], 2, 4))
            except BookingConflict as exc:
                return exc, book(request(cast["owner"], fleet_gpus[1:2], 2, 4))

    outcome = second_waits_for_first(
        lambda: Reservation.objects.create(user=cast["teammate"], gpu=fleet_gpus[0], start=at(1), end=at(3)),
        second,
    )
    refusal, other_gpu = outcome
    assert "GPU gpu-a100-01:0 is taken by bob until" in refusal.message
    assert [row.gpu_id for row in other_gpu] == [fleet_gpus[1].pk]
    assert Reservation.objects.filter(user=cast["owner"]).count() == 1


def test_a_booking_that_queued_behind_the_same_researchers_counts_its_hours(cast, fleet_gpus):
    QuotaPolicy.objects.update_or_create(pk=1, defaults={"user_gpu_hours_per_week": 10})
    hours = (week_start(timezone.now()) + timedelta(days=8, hours=12) - at(0)) / timedelta(hours=1)  # next Tuesday
    outcome = second_waits_for_first(
        lambda: book(request(cast["owner"], fleet_gpus[:1], hours, hours + 6)),
        lambda: book(request(cast["owner"], fleet_gpus[1:2], hours, hours + 6)),
    )
    assert isinstance(outcome, BookingError)
    assert "bring you to 12 hours of 10 GPU-hours" in outcome.message
    assert Reservation.objects.count() == 1


def test_a_refusal_is_one_query_naming_the_holder_and_the_end(cast, fleet_gpus):
    book(request(cast["teammate"], fleet_gpus[:1], 1, 3))
    limits_for(at(0), at(1))
    with CaptureQueriesContext(connection) as queries, pytest.raises(BookingConflict) as refused:
        book(request(cast["owner"], fleet_gpus[:2], 2, 4))
    assert len(queries) == 1
    assert refused.value.message == f"GPU gpu-a100-01:0 is taken by bob until {when(at(3))}."
    assert refused.value.field == "gpus"
    [conflict] = refused.value.conflicts
    assert (conflict.gpu_id, conflict.user.username, conflict.start, conflict.end) == (
        fleet_gpus[0].pk,
        "bob",
        at(1),
        at(3),
    )
    assert Reservation.objects.filter(user=cast["owner"]).count() == 0


def test_a_refusal_words_several_conflicts_as_the_careful_path_does(cast, fleet_gpus):
    for gpu, (start_h, end_h) in zip(fleet_gpus[:4], [(3, 5), (1, 6), (2, 4), (1, 2.5)], strict=True):
        book(request(cast["teammate"] if gpu != fleet_gpus[2] else cast["owner"], [gpu], start_h, end_h))
    with pytest.raises(BookingConflict) as refused:
        book(request(cast["owner"], fleet_gpus[:4], 2, 4))
    careful = conflict_error([g.pk for g in fleet_gpus[:4]], cast["owner"], at(2), at(4))
    assert refused.value.message == careful.message
    assert "taken by you until" in refused.value.message and "and 1 more" in refused.value.message
    assert [(row.pk, row.end) for row in refused.value.conflicts] == [(row.pk, row.end) for row in careful.conflicts]


def test_a_quota_refusal_is_one_query_with_the_careful_paths_words(cast, fleet_gpus):
    QuotaPolicy.objects.update_or_create(pk=1, defaults={"user_gpu_hours_per_week": 10})
    tuesday = (week_start(timezone.now()) + timedelta(days=8, hours=12) - at(0)) / timedelta(hours=1)
    book(request(cast["owner"], fleet_gpus[:1], tuesday, tuesday + 6))
    limits = limits_for(at(tuesday), at(tuesday + 6))
    with pytest.raises(QuotaError) as careful:
        check_weekly(cast["owner"], None, at(tuesday + 6), at(tuesday + 9), 2, limits)
    with CaptureQueriesContext(connection) as queries, pytest.raises(BookingError) as refused:
        book(request(cast["owner"], fleet_gpus[1:3], tuesday + 6, tuesday + 9))
    assert len(queries) == 1
    assert refused.value.message == careful.value.message
    assert "bring you to 12 hours of 10 GPU-hours" in refused.value.message
    assert refused.value.field == "end"
    assert Reservation.objects.count() == 1


def test_a_project_quota_refusal_names_the_project(cast, fleet_gpus):
    project = cast["project"]
    QuotaPolicy.objects.update_or_create(pk=1, defaults={"project_gpu_hours_per_week": 5})
    tuesday = (week_start(timezone.now()) + timedelta(days=8, hours=12) - at(0)) / timedelta(hours=1)
    book(request(cast["teammate"], fleet_gpus[:1], tuesday, tuesday + 4, project=project))
    with pytest.raises(BookingError) as refused:
        book(request(cast["owner"], fleet_gpus[1:2], tuesday, tuesday + 2, project=project))
    assert f"bring project {project.name} to 6 hours of 5 GPU-hours" in refused.value.message
