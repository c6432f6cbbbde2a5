"""Real node workers: a cancelled, preempted or reclaimed run saves a checkpoint as it stops, and a resumed
run continues from it (its step counter and loss carry on) to the accuracy a whole run reaches."""

import uuid
from datetime import timedelta

import psutil
import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from monitoring.alerts.choices import AlertKind, ReclaimStatus
from monitoring.alerts.models import Alert, Reclaim
from monitoring.alerts.rules.idle.reclaim import end_process
from reservations.booking import preempt
from reservations.models import Reservation
from tests.support.node_workers import run_processes, wait_until_no_run_processes
from tests.training.conftest import DIGITS_FAST, gpus_of, log_of, wait_for, wait_until
from training.cancel import request_cancel
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run
from training.run_files import checkpoint_dirs

pytestmark = pytest.mark.django_db(transaction=True)

# Long enough that a cancel always lands mid-training; the resumed run is stopped once it is good enough.
EPOCHS = 40


def launch_digits(user, gpus, **fields) -> Run:
    request = LaunchRequest(
        user=user, workload="digits_cnn", gpus=list(gpus), hyperparameters={**DIGITS_FAST, "epochs": EPOCHS}, **fields
    )
    plan, errors = check_launch(request)
    assert not errors, errors
    return launch(plan)


def trained_past(run: Run, step: int) -> None:
    wait_until(lambda: run.metrics.filter(step__gte=step).exists(), timeout_s=120, what=f"step {step} of #{run.pk}")


def assert_stopped_with_a_checkpoint(run: Run) -> None:
    assert run.checkpoint["reason"] == "stop", (run.checkpoint, log_of(run))
    assert run.checkpoint["step"] >= 1 and run.checkpoint["bytes"] > 0
    assert (checkpoint_dirs.run_dir(run) / checkpoint_dirs.FILE).stat().st_size == run.checkpoint["bytes"]
    log = log_of(run)
    assert "terminate called" not in log and "SIGABRT" not in log  # no rank aborted on its way out
    assert not wait_until_no_run_processes(run, timeout_s=5)


# (strategy, GPUs, processes). FSDP's two ranks agree every 10 steps whether to save and stop, then gather the
# shards to rank 0; Hogwild's parent pauses its two workers, takes their optimizers and saves the shared model.
STRATEGIES = [("single", 1, 1), ("fsdp", 2, 2), ("hogwild", 1, 2)]


@pytest.mark.parametrize("strategy, gpus, processes", STRATEGIES)
def test_a_cancelled_run_resumes_from_its_checkpoint_and_trains_on_to_the_same_accuracy(
    cast, worker_node, strategy, gpus, processes
):
    first = launch_digits(cast["owner"], gpus_of(worker_node, gpus), strategy=strategy, processes=processes)
    trained_past(first, 60)
    request_cancel(first, cast["owner"])
    first = wait_for(first, RunStatus.CANCELLED, timeout_s=60)
    assert_stopped_with_a_checkpoint(first)
    saved = first.checkpoint["step"]
    loss_then = first.metrics.filter(step__lte=saved).order_by("-id").first().loss

    api = APIClient()
    api.force_authenticate(cast["owner"])
    answer = api.post(f"/api/runs/{first.pk}/resume/")

    assert answer.status_code == 201, answer.json()
    resumed = Run.objects.get(pk=answer.json()["id"])
    assert answer.json()["resumed_from"] == first.pk
    assert (resumed.hyperparameters, resumed.workload, resumed.strategy) == (
        first.hyperparameters,
        first.workload,
        first.strategy,
    )
    carried = list(resumed.metrics.order_by("id").values_list("step", flat=True))
    assert carried and carried[-1] <= saved  # the curve up to the checkpoint, copied
    wait_until(lambda: resumed.metrics.filter(step__gt=saved).exists(), timeout_s=120, what="resumed progress")
    own = resumed.metrics.filter(step__gt=saved).order_by("id").first()
    # A fresh start reports loss ~2.3 at its first steps; the continuation starts near where the first run stood.
    assert own.step <= saved + 2 * 45
    assert own.loss < 1.0 and own.loss < 2 * loss_then + 0.2, (own.loss, loss_then)
    wait_until(
        lambda: resumed.metrics.filter(accuracy__gte=0.95).exists(), timeout_s=180, what="95 % held-out accuracy"
    )
    assert f"resumed from {checkpoint_dirs.run_dir(first)}" in log_of(resumed)
    resumed.refresh_from_db()
    assert resumed.environment["strategy"] == strategy and resumed.environment["world_size"] == processes
    request_cancel(resumed, cast["owner"])
    resumed = wait_for(resumed, RunStatus.CANCELLED, timeout_s=60)
    assert_stopped_with_a_checkpoint(resumed)
    assert resumed.checkpoint["step"] > saved


@pytest.mark.parametrize("strategy, gpus", [("single", 1), ("fsdp", 2)])
def test_an_admins_preempt_of_the_booking_stops_its_run_with_a_checkpoint(cast, worker_node, strategy, gpus):
    start = timezone.now() - timedelta(minutes=1)
    booking = uuid.uuid4()
    for gpu in gpus_of(worker_node, gpus):
        Reservation.objects.create(
            user=cast["owner"], gpu=gpu, booking=booking, start=start, end=start + timedelta(hours=2)
        )
    run = launch_digits(cast["owner"], [], booking=str(booking), strategy=strategy)
    trained_past(run, 1)

    preempt(booking, cast["admin"], "deadline work")
    run = wait_for(run, RunStatus.CANCELLED, timeout_s=60)

    assert "preempted by root" in run.error and "deadline work" in run.error
    assert run.environment["world_size"] == gpus
    assert_stopped_with_a_checkpoint(run)


def test_reclaiming_a_runs_idle_process_stops_the_whole_run_with_a_checkpoint(cast, worker_node):
    gpu = gpus_of(worker_node, 1)[0]
    run = launch_digits(cast["owner"], [gpu])
    trained_past(run, 1)
    worker = max(run_processes(run), key=lambda process: process.pid)  # the training process itself
    alert = Alert.objects.create(
        kind=AlertKind.IDLE_PROCESS,
        key=f"idle-{run.pk}",
        title="idle",
        gpu=gpu,
        node=gpu.node,
        details={"run_id": run.pk},
    )
    reclaim = Reclaim.objects.create(
        alert=alert,
        node=gpu.node,
        gpu=gpu,
        os_user=worker.username(),
        pid=worker.pid,
        cmdline=" ".join(worker.cmdline()),
        grace_s=3,
    )

    assert end_process(reclaim.pk) == ReclaimStatus.TERMINATED
    run = wait_for(run, RunStatus.CANCELLED, timeout_s=60)

    assert "reclaimed" in run.error
    assert_stopped_with_a_checkpoint(run)
    assert not psutil.pid_exists(worker.pid) or psutil.Process(worker.pid).status() == psutil.STATUS_ZOMBIE
