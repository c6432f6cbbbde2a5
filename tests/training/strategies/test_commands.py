"""Each strategy builds its node's command line from one NodeShare."""

import sys

from training import strategies
from training.strategies import NodeShare
from training.strategies.hogwild import hogwild_argv

DIGITS = "training.workloads.digits_cnn"


def test_single_runs_the_workload_module_or_the_script_as_a_plain_program():
    single = strategies.get("single")
    assert single.command(NodeShare(processes=1, module=DIGITS, args=["--epochs", "3"])) == [
        sys.executable,
        "-m",
        DIGITS,
        "--epochs",
        "3",
    ]
    assert single.command(NodeShare(processes=1, script="/srv/train.py")) == [sys.executable, "/srv/train.py"]


def test_ddp_on_one_node_is_standalone_and_a_script_replaces_the_module():
    ddp = strategies.get("ddp")
    argv = ddp.command(NodeShare(processes=2, script="/srv/train.py", args=["--seed", "1"]))
    assert "--standalone" in argv and "--module" not in argv
    assert argv[-3:] == ["/srv/train.py", "--seed", "1"]


def test_ddp_over_nodes_meets_at_node_zero_and_gives_up_on_a_node_that_never_joins():
    ddp = strategies.get("ddp")
    share = dict(processes=2, module=DIGITS, node_count=2, rendezvous="gpu-01:29400", rendezvous_id="fleet-run-7")
    host = ddp.command(NodeShare(node_rank=0, rendezvous_timeout_s=120, **share))
    guest = ddp.command(NodeShare(node_rank=1, rendezvous_timeout_s=120, **share))
    assert host[host.index("--rdzv-conf") + 1] == "is_host=true,join_timeout=120"
    assert guest[guest.index("--rdzv-conf") + 1] == "is_host=false,join_timeout=120"
    assert host[host.index("--rdzv-id") + 1] == "fleet-run-7"


def test_hogwild_starts_its_supervisor_beside_the_workloads():
    argv = strategies.get("hogwild").command(NodeShare(processes=3, workload="digits_cnn", args=["--tiny"]))
    assert argv == hogwild_argv("digits_cnn", 3, ["--tiny"])
    assert argv[1:3] == ["-m", "training.workloads.hogwild_supervisor"]
