"""Hogwild runs: worker processes sharing one model without locks."""

import sys

import psutil
from training_runs import assert_follows_protocol, assert_stops_cleanly, only, run_to_end

from training.strategies.hogwild import hogwild_argv


def test_the_hogwild_command_is_an_argument_list_for_this_interpreter():
    assert hogwild_argv("digits_cnn", 2, ["--epochs", "3"]) == [
        sys.executable,
        "-m",
        "training.workloads.hogwild_supervisor",
        "--workload",
        "digits_cnn",
        "--workers",
        "2",
        "--epochs",
        "3",
    ]


def test_hogwild_with_two_workers_reaches_95_percent_on_digits():
    done, found = run_to_end(hogwild_argv("digits_cnn", 2, ["--tiny"]))

    assert done.returncode == 0, done.stderr[-3000:]
    assert_follows_protocol(found, strategy="hogwild", world_size=2)
    assert found[0]["threads_per_worker"] == 1  # two workers on two cores, one thread each
    finished = only(found, "done")
    assert finished["accuracy"] >= 0.95
    assert finished["samples_per_s"] > 0


def test_sigterm_to_the_process_group_of_a_hogwild_run_leaves_no_process_behind(start):
    running = start(hogwild_argv("digits_cnn", 2, ["--tiny", "--epochs", "1000"]))
    running.wait_for("progress")

    assert_stops_cleanly(running, "group")


def test_sigterm_to_the_hogwild_parent_alone_ends_its_workers(start):
    running = start(hogwild_argv("digits_cnn", 2, ["--tiny", "--epochs", "1000"]))
    running.wait_for("progress")

    assert_stops_cleanly(running, "launcher")
    assert running.proc.returncode == 143


def test_a_worker_that_dies_fails_the_run_and_takes_the_other_workers_down(start):
    running = start(hogwild_argv("digits_cnn", 2, ["--tiny", "--epochs", "1000"]))
    running.wait_for("progress")
    members = running.tree()
    workers = [p for p in members if "spawn_main" in " ".join(p.cmdline())]

    workers[0].kill()

    assert running.proc.wait(timeout=60) == 1
    assert "worker" in running.stderr_text()
    _, alive = psutil.wait_procs(members, timeout=30)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
