"""A run moves queued → starting → running → an end state, and refuses every other move."""

import pytest

from training.choices import RunStatus
from training.models import IllegalTransition, Run


@pytest.fixture
def run(cast):
    return Run.objects.create(owner=cast["owner"], name="r", workload="digits_cnn", strategy="single")


def test_it_walks_the_happy_path(run):
    run.start()
    run.mark_running()
    run.finish(RunStatus.SUCCEEDED, exit_code=0)

    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert run.started_at <= run.finished_at and run.exit_code == 0


def test_it_refuses_to_succeed_a_run_that_never_started(run):
    with pytest.raises(IllegalTransition):
        run.finish(RunStatus.SUCCEEDED)
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


def test_it_refuses_to_end_a_run_twice(run):
    run.finish(RunStatus.CANCELLED, "Cancelled by alice.")
    with pytest.raises(IllegalTransition):
        run.finish(RunStatus.FAILED, "late failure")
    run.refresh_from_db()
    assert (run.status, run.error) == (RunStatus.CANCELLED, "Cancelled by alice.")


def test_it_refuses_an_end_state_that_is_not_one(run):
    with pytest.raises(IllegalTransition):
        run.finish(RunStatus.RUNNING)


def test_a_stale_copy_cannot_overwrite_what_another_process_decided(run):
    run.start()
    stale = Run.objects.get(pk=run.pk)
    run.finish(RunStatus.LOST, "no heartbeat")

    with pytest.raises(IllegalTransition):
        stale.finish(RunStatus.SUCCEEDED)
    assert Run.objects.get(pk=run.pk).status == RunStatus.LOST


def test_only_a_started_run_can_be_lost(run):
    with pytest.raises(IllegalTransition):
        run.finish(RunStatus.LOST)


def test_marking_running_twice_is_harmless(run):
    run.start()
    run.mark_running()
    run.mark_running()
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING


def test_every_status_has_a_label_and_a_colour():
    for status in RunStatus:
        assert status.label and status.colour
