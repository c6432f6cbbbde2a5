"""A real node worker starts single, DDP and Hogwild runs of real torch, streams them, and cancels them cleanly."""

import textwrap
import time

import pytest

from tests.support.node_workers import run_processes, wait_until_no_run_processes
from tests.training.conftest import DIGITS_LONG, gpus_of, log_of, start_run, wait_for, wait_until
from training.cancel import request_cancel
from training.choices import RunNodeStatus, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


def assert_trained_well(run):
    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    assert run.exit_code == 0
    assert run.result["accuracy"] >= 0.95
    assert run.accuracy >= 0.95
    assert run.metrics.count() >= 2
    steps = list(run.metrics.order_by("id").values_list("step", flat=True))
    assert steps == sorted(steps) and run.step == steps[-1]
    assert run.first_step_at and run.started_at <= run.first_step_at <= run.finished_at
    assert run.environment["torch"].startswith("2.13") and run.environment["python"].startswith("3.")
    assert run.environment["node"] == run.nodes.get().node.hostname
    assert run.environment["packages"]["torch"].startswith("2.13") and "-m" in run.environment["command"]
    assert run.nodes.get().status == RunNodeStatus.EXITED
    assert not run_processes(run)


def test_a_single_process_run_trains_digits_to_95_percent(cast, worker_node):
    run = start_run(cast["owner"], gpus_of(worker_node, 1))

    run = wait_for(run, RunStatus.finished())

    assert_trained_well(run)
    assert run.environment["strategy"] == "single" and run.environment["world_size"] == 1
    assert run.environment["cuda_visible_devices"] == "0"
    assert any("held-out accuracy" in line for line in run.logs.values_list("line", flat=True))


def test_ddp_with_two_processes_trains_digits_to_95_percent(cast, worker_node):
    run = start_run(cast["owner"], gpus_of(worker_node, 2), strategy="ddp", epochs=8)

    run = wait_for(run, RunStatus.finished())

    assert_trained_well(run)
    assert run.environment["strategy"] == "ddp" and run.environment["world_size"] == 2
    assert run.environment["cuda_visible_devices"] == "0,1"


def test_fsdp_with_two_processes_trains_digits_to_95_percent(cast, worker_node):
    run = start_run(cast["owner"], gpus_of(worker_node, 2), strategy="fsdp", epochs=12)

    run = wait_for(run, RunStatus.finished())

    assert_trained_well(run)
    assert run.environment["strategy"] == "fsdp" and run.environment["world_size"] == 2


def test_hogwild_with_two_workers_trains_digits_to_95_percent(cast, worker_node):
    # Each worker takes half the steps of an epoch; 10 epochs leave margin on a loaded node (6 once gave 0.936).
    run = start_run(cast["owner"], gpus_of(worker_node, 1), strategy="hogwild", processes=2, epochs=10)

    run = wait_for(run, RunStatus.finished())

    assert_trained_well(run)
    assert run.environment["strategy"] == "hogwild" and run.environment["world_size"] == 2


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_cancel_ends_every_process_of_a_torchrun_run(cast, worker_node, strategy):
    run = start_run(cast["owner"], gpus_of(worker_node, 2), strategy=strategy, **DIGITS_LONG)
    wait_until(lambda: run.metrics.exists(), what="first progress")
    assert len(run_processes(run)) >= 3  # torchrun and its two workers

    asked = time.monotonic()
    request_cancel(run, cast["owner"])
    run = wait_for(run, RunStatus.CANCELLED, timeout_s=30)

    assert time.monotonic() - asked < 15
    assert run.error == "Cancelled by alice."
    assert run.exit_code != 0
    assert not wait_until_no_run_processes(run, timeout_s=5)


def test_a_run_waits_in_the_queue_while_another_run_holds_its_gpu(cast, worker_node):
    gpu = gpus_of(worker_node, 1)
    first = start_run(cast["owner"], gpu, **DIGITS_LONG)
    wait_for(first, RunStatus.RUNNING)
    second = start_run(cast["teammate"], gpu)

    time.sleep(2)
    second.refresh_from_db()
    assert second.status == RunStatus.QUEUED
    request_cancel(first, cast["owner"])

    wait_for(second, [RunStatus.STARTING, RunStatus.RUNNING], timeout_s=30)
    request_cancel(second, cast["teammate"])


def test_a_failing_script_fails_the_run_with_its_last_lines(cast, worker_node, tmp_path, settings):
    settings.RUN_SCRIPT_DIRS = [str(tmp_path)]
    script = tmp_path / "broken.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            print('FLEET_EVENT {"event": "progress", "step": 1, "epoch": 1, "loss": 2.5, "ts": 1795000000.0}')
            print("loading the data", flush=True)
            sys.exit("the data is not where it should be")
            """
        )
    )

    run = start_run(cast["owner"], gpus_of(worker_node, 1), workload="script", script=str(script))
    run = wait_for(run, RunStatus.finished(), timeout_s=60)

    assert run.status == RunStatus.FAILED
    assert run.exit_code == 1
    assert "exited with code 1" in run.error and "the data is not where it should be" in run.error
    assert run.step == 1 and run.loss == 2.5
    assert list(run.logs.values_list("line", flat=True)) == ["loading the data", "the data is not where it should be"]


def test_a_process_a_script_leaves_behind_is_ended_with_the_run(cast, worker_node, tmp_path, settings):
    settings.RUN_SCRIPT_DIRS = [str(tmp_path)]
    script = tmp_path / "leaves_a_child.py"
    script.write_text(
        textwrap.dedent(
            """
            import subprocess, sys
            # A child in a session of its own that keeps the run's output open and outlives the script.
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
            print("started a helper and leaving", flush=True)
            """
        )
    )

    run = start_run(cast["owner"], gpus_of(worker_node, 1), workload="script", script=str(script))
    run = wait_for(run, RunStatus.finished(), timeout_s=60)

    assert run.status == RunStatus.SUCCEEDED and run.exit_code == 0
    assert "started a helper and leaving" in log_of(run)
    assert not wait_until_no_run_processes(run, timeout_s=5)
