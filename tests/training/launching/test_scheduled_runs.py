"""A run that starts when my booking begins: stored "scheduled", queued at the booking's start on its GPUs,
and refused on a cancelled, too short or someone else's booking."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from reservations.choices import ReservationStatus
from reservations.models import Reservation
from tests.training.conftest import DIGITS_LONG, gpus_of, queued_messages, wait_for, wait_until
from training.cancel import request_cancel
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.launching.scheduled import start_due_runs
from training.models import Run, RunNode


def book(user, gpus, starts_in_s: float, hours: float = 1.0) -> Reservation:
    start = timezone.now() + timedelta(seconds=starts_in_s)
    rows = [Reservation(user=user, gpu=gpu, start=start, end=start + timedelta(hours=hours)) for gpu in gpus]
    key = rows[0].booking
    for row in rows:
        row.booking = key
    Reservation.objects.bulk_create(rows)
    return rows[0]


def check(user, booking, **fields):
    hyper = fields.pop("hyperparameters", {"epochs": 2})
    request = LaunchRequest(user=user, workload="digits_cnn", booking=str(booking), hyperparameters=hyper, **fields)
    return check_launch(request)


@pytest.mark.django_db
def test_a_run_on_a_later_booking_is_scheduled_on_its_gpus_and_sends_nothing(
    cast, quiet_node, django_capture_on_commit_callbacks
):
    row = book(cast["owner"], gpus_of(quiet_node, 2), starts_in_s=3600)
    plan, errors = check(cast["owner"], row.booking, strategy="ddp")
    assert errors == {} and plan.gpus == gpus_of(quiet_node, 2) and plan.start_at == row.start
    with django_capture_on_commit_callbacks(execute=True):
        run = launch(plan)
    assert run.status == RunStatus.SCHEDULED and run.reservation == row
    assert queued_messages(quiet_node.hostname) == 0
    assert start_due_runs() == []  # not yet
    assert Run.objects.get(pk=run.pk).status == RunStatus.SCHEDULED
    request_cancel(run, cast["owner"])
    assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED


@pytest.mark.django_db
def test_someone_elses_booking_is_refused_and_nothing_is_stored(cast, quiet_node):
    row = book(cast["teammate"], gpus_of(quiet_node, 1), starts_in_s=3600)
    for user in (cast["owner"], cast["admin"]):
        plan, errors = check(user, row.booking)
        assert plan is None and "That booking is bob's" in errors["booking"]
    assert Run.objects.count() == 0 and queued_messages(quiet_node.hostname) == 0


@pytest.mark.django_db
def test_a_cancelled_unknown_or_malformed_booking_is_refused(cast, quiet_node):
    row = book(cast["owner"], gpus_of(quiet_node, 1), starts_in_s=3600)
    Reservation.objects.filter(booking=row.booking).update(status=ReservationStatus.CANCELLED)
    assert "was cancelled" in check(cast["owner"], row.booking)[1]["booking"]
    assert "There is no booking" in check(cast["owner"], "00000000-0000-0000-0000-000000000000")[1]["booking"]
    assert "a UUID" in check(cast["owner"], "x\x00y")[1]["booking"]
    assert Run.objects.count() == 0


@pytest.mark.django_db
def test_a_booking_too_short_for_the_expected_time_is_refused(cast, quiet_node, monkeypatch):
    from training import run_cost

    monkeypatch.setattr(run_cost, "seconds_per_epoch", lambda *args: (600.0, 3))  # past runs: 10 min an epoch
    row = book(cast["owner"], gpus_of(quiet_node, 1), starts_in_s=3600, hours=0.5)
    plan, errors = check(cast["owner"], row.booking, hyperparameters={"epochs": 6})
    assert plan is None and "past runs like this one took about 60 min" in errors["booking"]
    assert check(cast["owner"], row.booking, hyperparameters={"epochs": 2})[1] == {}


@pytest.mark.django_db
def test_the_api_schedules_on_a_booking_and_refuses_someone_elses(cast, quiet_node):
    mine = book(cast["owner"], gpus_of(quiet_node, 1), starts_in_s=3600)
    theirs = book(cast["teammate"], gpus_of(quiet_node)[1:], starts_in_s=3600)
    api = APIClient()
    api.force_authenticate(cast["owner"])
    body = {"workload": "digits_cnn", "hyperparameters": {"epochs": 1}}
    response = api.post("/api/runs/", {**body, "booking": str(theirs.booking)}, format="json")
    assert response.status_code == 400 and "booking" in str(response.json())
    response = api.post("/api/runs/", {**body, "booking": str(mine.booking)}, format="json")
    assert response.status_code == 201, response.json()
    assert (
        response.json()["status"] == "scheduled"
        and "waiting for its booking to begin" in response.json()["waiting_for"]
    )


@pytest.mark.django_db(transaction=True)
def test_a_scheduled_run_starts_when_its_booking_begins(cast, worker_node):
    row = book(cast["owner"], gpus_of(worker_node, 1), starts_in_s=4)
    plan, errors = check(cast["owner"], row.booking, hyperparameters=DIGITS_LONG)
    assert errors == {}
    run = launch(plan)
    assert Run.objects.get(pk=run.pk).status == RunStatus.SCHEDULED

    def begun() -> bool:
        start_due_runs()  # what beat does every RUN_SCHEDULE_CHECK_S
        return Run.objects.get(pk=run.pk).status != RunStatus.SCHEDULED

    wait_until(begun, 60, "the booking to begin")
    run = wait_for(run, RunStatus.RUNNING)
    assert run.started_at >= row.start
    assert RunNode.objects.get(run=run).gpu_indexes == [gpus_of(worker_node, 1)[0].index]


@pytest.mark.django_db
def test_a_scheduled_run_whose_booking_was_cancelled_fails_at_its_start(cast, quiet_node):
    row = book(cast["owner"], gpus_of(quiet_node, 1), starts_in_s=3600)
    run = launch(check(cast["owner"], row.booking)[0])
    Reservation.objects.filter(booking=row.booking).update(status=ReservationStatus.CANCELLED)
    Run.objects.filter(pk=run.pk).update(start_at=timezone.now())
    assert start_due_runs() == [run.pk]
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error == "Its booking was cancelled before the run could start."
    assert queued_messages(quiet_node.hostname) == 0
