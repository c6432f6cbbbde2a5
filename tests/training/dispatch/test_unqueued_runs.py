"""A run whose message the broker refuses when it is queued (a launch, a booking that begins, a sweep placing a
run) ends failed through the run's lifecycle: it says why, and whatever listens for a run's end hears of it
(a burn-in leaves its record without a verdict)."""

import socket
from contextlib import contextmanager

import pytest
from celery import Celery, current_app
from django.utils import timezone

from inventory.models import GPU, GPUModel, Node
from monitoring.health.burnin_launch import burn_in
from monitoring.health.models import BurnIn
from tests.training.conftest import gpus_of, start_run
from tests.training.launching.test_scheduled_runs import book, check
from tests.training.sweeps.test_sweep_placement import online, sweep_of
from training.choices import RunStatus
from training.dispatch.send import fail_unqueued
from training.launching.launch import launch
from training.launching.scheduled import start_due_runs
from training.models import Run, run_finished

pytestmark = pytest.mark.django_db


def closed_port() -> int:
    """A local port nothing listens on: a connection to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def refusing_broker():
    """The Celery app the web app sends with, its broker unreachable, as when Redis is down."""
    previous = current_app._get_current_object()
    app = Celery("refusing", broker=f"redis://127.0.0.1:{closed_port()}/0", set_as_current=False)
    app.conf.broker_connection_retry = False
    app.conf.task_publish_retry = False
    app.set_current()
    try:
        yield app
    finally:
        previous.set_current()
        app.close()


@contextmanager
def ends_heard():
    """The runs ``run_finished`` announces meanwhile, with the state each was in when it was sent."""
    heard = []

    def listen(sender, run, **kwargs):
        heard.append((run.pk, Run.objects.get(pk=run.pk).status))

    run_finished.connect(listen, weak=False)
    try:
        yield heard
    finally:
        run_finished.disconnect(listen)


def failed_to_queue(run: Run) -> Run:
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.finished_at is not None, (run.status, run.error)
    assert run.error.startswith("Could not queue the run: "), run.error
    return run


@pytest.fixture
def node(gpu_models):
    node = Node.objects.create(hostname="gpu-unqueued", status="online", cpu_count=2)
    for index in range(2):
        GPU.objects.create(node=node, index=index, uuid=f"GPU-unqueued-{index}", model=GPUModel.objects.get(name="T4"))
    return node


def test_a_launch_the_broker_refuses_fails_the_run_through_its_end(
    cast, node, refusing_broker, django_capture_on_commit_callbacks
):
    with ends_heard() as heard, django_capture_on_commit_callbacks(execute=True):
        run = start_run(cast["owner"], gpus_of(node, 1))

    failed_to_queue(run)
    assert heard == [(run.pk, RunStatus.FAILED)]


def test_a_burn_in_the_broker_refuses_leaves_its_gpus_record_without_a_verdict(
    cast, node, refusing_broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        (run,) = burn_in(cast["admin"], gpus_of(node, 1))

    run = failed_to_queue(run)
    (record,) = BurnIn.objects.filter(run=run)
    assert record.gpu == gpus_of(node, 1)[0] and record.passed is None
    assert record.reason == f"The burn-in did not finish (failed): {run.error}"


def test_a_scheduled_run_the_broker_refuses_when_its_booking_begins_fails_through_its_end(
    cast, node, refusing_broker, django_capture_on_commit_callbacks
):
    row = book(cast["owner"], gpus_of(node, 1), starts_in_s=3600)
    run = launch(check(cast["owner"], row.booking)[0])
    Run.objects.filter(pk=run.pk).update(start_at=timezone.now())

    with ends_heard() as heard, django_capture_on_commit_callbacks(execute=True):
        assert start_due_runs() == [run.pk]

    failed_to_queue(run)
    assert heard == [(run.pk, RunStatus.FAILED)]


def test_a_sweep_run_the_broker_refuses_when_it_is_placed_fails_through_its_end(
    cast, node, refusing_broker, django_capture_on_commit_callbacks
):
    online(node)
    with ends_heard() as heard, django_capture_on_commit_callbacks(execute=True):
        sweep = sweep_of(cast["owner"], node, runs=2, gpu_model=gpus_of(node, 1)[0].model, gpu_count=1)

    (placed,) = sweep.runs.filter(nodes__isnull=False)
    failed_to_queue(placed)
    assert heard == [(placed.pk, RunStatus.FAILED)]
    assert sweep.runs.exclude(pk=placed.pk).get().status == RunStatus.QUEUED  # the next waits for a free GPU


def test_a_run_no_longer_queued_is_left_as_it_is(cast, node):
    started, cancelled = (start_run(cast["owner"], [gpu]) for gpu in gpus_of(node))
    started.start()
    Run.objects.filter(pk=cancelled.pk).update(status=RunStatus.CANCELLED, finished_at=timezone.now())

    with ends_heard() as heard:
        assert not fail_unqueued(started, "Could not queue the run: refused")
        assert not fail_unqueued(cancelled, "Could not queue the run: refused")

    assert [Run.objects.get(pk=run.pk).status for run in (started, cancelled)] == [
        RunStatus.STARTING,
        RunStatus.CANCELLED,
    ]
    assert heard == [] and Run.objects.get(pk=started.pk).error == ""
