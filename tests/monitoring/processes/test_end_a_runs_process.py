"""End on a fleet run's process stops the whole run, as its Cancel does: real node worker, a real DDP(2) run
on simulated GPUs (what the simulated agent reports, checked by the ingest), real torch processes."""

import time
from types import SimpleNamespace

import pytest
from rest_framework.test import APIClient

from monitoring.agent.localruns import LocalRuns
from monitoring.alerts.choices import ReclaimStatus
from monitoring.ingest.claims import check_claims
from monitoring.ingest.validation import Problems, check_processes
from monitoring.processes.models import ProcessStop
from tests.support.gpus import set_state
from tests.support.node_workers import run_processes
from tests.training import conftest as run_fixtures
from tests.training.conftest import gpus_of, log_of, wait_for, wait_until
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run
from training.run_files import checkpoint_dirs

pytestmark = pytest.mark.django_db(transaction=True)
# The run tests' real node worker (one for the module) and its node of two simulated GPUs.
node_worker = run_fixtures.node_worker
worker_node = run_fixtures.worker_node

DIGITS_LONG = {"epochs": 40, "batch_size": 32, "lr": 0.003, "optimizer": "adam", "seed": 0}


def report_run_processes(node) -> None:
    """Store what the node's simulated agent reports now (monitoring/agent/localruns.py), through the ingest's
    own checks: each process validated, its run claim believed only for a run placed on that GPU."""
    found = LocalRuns(node.hostname).processes_by_gpu(node.gpus.count())
    for gpu in node.gpus.all():
        problems = Problems()
        raw = found.get(gpu.index, [])
        checked = check_processes(raw, "processes", time.time(), problems, texts_storable=False)
        assert not problems.items, problems.items
        check_claims([(SimpleNamespace(id=gpu.pk), SimpleNamespace(processes=checked))])
        set_state(gpu, processes=checked)


def reported_ranks(node, run: Run) -> list[tuple]:
    """(GPU, process) for each process of the run the node's GPUs report, as the ingest believed them."""
    report_run_processes(node)
    return [
        (gpu, p) for gpu in node.gpus.select_related("state") for p in gpu.state.processes if p.get("run") == run.pk
    ]


def ddp_run(user, node) -> Run:
    request = LaunchRequest(
        user=user, workload="digits_cnn", strategy="ddp", gpus=gpus_of(node, 2), hyperparameters=DIGITS_LONG
    )
    plan, errors = check_launch(request)
    assert not errors, errors
    run = launch(plan)
    wait_until(lambda: run.metrics.filter(step__gte=20).exists(), timeout_s=180, what=f"step 20 of #{run.pk}")
    wait_until(lambda: len(reported_ranks(node, run)) == 2, timeout_s=60, what="both ranks on their GPUs")
    return run


def end(user, gpu, pid, **extra):
    api = APIClient()
    api.force_authenticate(user)
    return api.post("/api/processes/stop/", {"gpu": gpu.uuid, "pid": pid, **extra}, format="json")


def test_end_on_one_rank_stops_the_whole_run_with_a_checkpoint_and_leaves_no_process(cast, worker_node):
    run = ddp_run(cast["owner"], worker_node)
    (gpu, rank), (other_gpu, other) = reported_ranks(worker_node, run)
    assert gpu != other_gpu and rank["pid"] != other["pid"]  # one rank per simulated GPU

    answer = end(cast["owner"], gpu, rank["pid"], run=run.pk)

    assert answer.status_code == 202, answer.content
    assert answer.json()["run"] == run.pk
    assert f"this ends run #{run.pk} (2 processes)" in answer.json()["detail"]
    run = wait_for(run, RunStatus.finished(), timeout_s=90)
    assert run.status == RunStatus.CANCELLED, (run.status, run.error, log_of(run))
    assert "Cancelled by alice from the process table" in run.error and f"pid {rank['pid']}" in run.error
    assert run.checkpoint["reason"] == "stop" and run.checkpoint["step"] >= 20, (run.checkpoint, log_of(run))
    assert (checkpoint_dirs.run_dir(run) / checkpoint_dirs.FILE).stat().st_size == run.checkpoint["bytes"]
    assert not run_processes(run)
    stop = wait_until_recorded()
    assert (stop.run_id, stop.pid, stop.requested_by) == (run.pk, rank["pid"], cast["owner"])
    assert stop.status == ReclaimStatus.TERMINATED, stop.error


def wait_until_recorded() -> ProcessStop:
    wait_until(lambda: ProcessStop.objects.exclude(status=ReclaimStatus.REQUESTED).exists(), 60, "the stop's record")
    return ProcessStop.objects.get()


def test_a_researcher_who_does_not_own_the_run_gets_403_and_the_run_goes_on(cast, worker_node):
    run = ddp_run(cast["owner"], worker_node)
    (gpu, rank), _ = reported_ranks(worker_node, run)

    for who in ("teammate", "outsider"):
        answer = end(cast[who], gpu, rank["pid"])
        assert answer.status_code == 403, answer.content

    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.cancel_requested_at is None
    assert not ProcessStop.objects.exists() and len(run_processes(run)) >= 2


def test_a_pid_that_is_not_the_expected_runs_is_refused_and_nothing_ends(cast, worker_node):
    run = ddp_run(cast["owner"], worker_node)
    (gpu, rank), _ = reported_ranks(worker_node, run)

    answer = end(cast["admin"], gpu, rank["pid"], run=run.pk + 1000)

    assert answer.status_code == 409 and f"run #{run.pk}'s" in answer.json()["detail"]
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.cancel_requested_at is None and not ProcessStop.objects.exists()
