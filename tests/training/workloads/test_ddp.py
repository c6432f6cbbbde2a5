"""DDP runs of the digits CNN under torchrun, on one node and across two."""

import sys

import psutil
import pytest
from training_runs import assert_follows_protocol, assert_stops_cleanly, only, run_to_end

from training.strategies.ddp import torchrun_argv

DIGITS = "training.workloads.digits_cnn"


def test_the_torchrun_command_is_an_argument_list_for_this_interpreter():
    argv = torchrun_argv(DIGITS, 2, script_args=["--epochs", "3"])

    assert argv[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert argv[argv.index("--nproc-per-node") + 1] == "2"
    assert "--standalone" in argv
    assert argv[-4:] == ["--module", DIGITS, "--epochs", "3"]


def test_a_multi_node_command_meets_at_the_rendezvous_and_node_0_serves_it():
    node0 = torchrun_argv(DIGITS, 4, nnodes=2, node_rank=0, rdzv_endpoint="gpu-01:29400", rdzv_id="run-7")
    node1 = torchrun_argv(DIGITS, 4, nnodes=2, node_rank=1, rdzv_endpoint="gpu-01:29400", rdzv_id="run-7")

    for argv in (node0, node1):
        assert "--standalone" not in argv
        assert argv[argv.index("--nnodes") + 1] == "2"
        assert argv[argv.index("--rdzv-backend") + 1] == "c10d"
        assert argv[argv.index("--rdzv-endpoint") + 1] == "gpu-01:29400"
        assert argv[argv.index("--rdzv-id") + 1] == "run-7"
    assert node0[node0.index("--rdzv-conf") + 1] == "is_host=true"
    assert node1[node1.index("--rdzv-conf") + 1] == "is_host=false"


def test_it_refuses_a_multi_node_command_without_a_rendezvous():
    with pytest.raises(ValueError):
        torchrun_argv(DIGITS, 2, nnodes=2, node_rank=1)
    with pytest.raises(ValueError):
        torchrun_argv(DIGITS, 2, nnodes=2, node_rank=2, rdzv_endpoint="h:1", rdzv_id="r")


def test_ddp_with_two_processes_reaches_95_percent_on_digits():
    done, found = run_to_end(torchrun_argv(DIGITS, 2, script_args=["--tiny"]))

    assert done.returncode == 0, done.stderr[-3000:]
    assert_follows_protocol(found, strategy="ddp", world_size=2)  # rank 0 alone reports
    assert only(found, "done")["accuracy"] >= 0.95


def test_ddp_across_two_nodes_meeting_at_one_rendezvous_reaches_95_percent_on_digits(start, free_port):
    endpoint = f"127.0.0.1:{free_port}"
    # Both "nodes" share this machine's two cores: one thread per rank.
    nodes = [
        start(torchrun_argv(DIGITS, 1, 2, rank, endpoint, "test-two-nodes", ["--tiny", "--threads", "1"]))
        for rank in (0, 1)
    ]

    found = [node.finish(timeout=180) for node in nodes]

    assert [node.proc.returncode for node in nodes] == [0, 0], [node.stderr_text() for node in nodes]
    reporting = [events for events in found if events]
    assert len(reporting) == 1, "exactly one node holds rank 0 and reports"
    assert_follows_protocol(reporting[0], strategy="ddp", world_size=2)
    assert only(reporting[0], "done")["accuracy"] >= 0.95


def test_sigterm_to_the_process_group_of_a_ddp_run_leaves_no_process_behind(start):
    running = start(torchrun_argv(DIGITS, 2, script_args=["--tiny", "--epochs", "1000"]))
    running.wait_for("progress")

    assert_stops_cleanly(running, "group")


def test_sigterm_to_torchrun_alone_ends_its_workers(start):
    running = start(torchrun_argv(DIGITS, 2, script_args=["--tiny", "--epochs", "1000"]))
    running.wait_for("progress")

    assert_stops_cleanly(running, "launcher")


def test_ddp_workers_stop_by_themselves_when_torchrun_is_killed(start):
    running = start(torchrun_argv(DIGITS, 2, script_args=["--tiny", "--epochs", "1000"]))
    running.wait_for("progress")
    workers = running.tree()[1:]

    running.proc.kill()  # SIGKILL: torchrun cannot forward anything

    _, alive = psutil.wait_procs(workers, timeout=30)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
