"""FSDP: torchrun like DDP, the built-in workloads told to shard, user scripts only when they declare support."""

import pytest

from tests.training.conftest import gpus_of, queued_messages
from training import strategies
from training.launching.launch import LaunchRequest, check_launch
from training.models import Run
from training.strategies import NodeShare
from training.strategies.fsdp import declared_strategies
from training.web.forms import LaunchForm

DIGITS = "training.workloads.digits_cnn"


def test_fsdp_runs_a_built_in_workload_under_torchrun_told_to_shard():
    argv = strategies.get("fsdp").command(NodeShare(processes=2, module=DIGITS, workload="digits_cnn", args=["--tiny"]))
    ddp = strategies.get("ddp").command(NodeShare(processes=2, module=DIGITS, workload="digits_cnn", args=["--tiny"]))
    assert argv == [*ddp, "--strategy", "fsdp"]


def test_fsdp_spans_nodes_like_ddp():
    share = dict(processes=1, module=DIGITS, workload="digits_cnn", node_count=2, rendezvous="gpu-01:29400")
    argv = strategies.get("fsdp").command(NodeShare(node_rank=1, rendezvous_id="fleet-run-9", **share))
    assert argv[argv.index("--rdzv-conf") + 1].startswith("is_host=false")
    assert strategies.get("fsdp").spans_nodes


def test_a_script_gets_no_extra_flag_it_may_not_parse():
    argv = strategies.get("fsdp").command(NodeShare(processes=2, script="/srv/train.py", args=["--seed", "1"]))
    assert argv[-3:] == ["/srv/train.py", "--seed", "1"]


@pytest.mark.parametrize(
    "source, declared",
    [
        ('FLEET_STRATEGIES = ["ddp", "fsdp"]\n', ("ddp", "fsdp")),
        ("FLEET_STRATEGIES = ('FSDP',)\n", ("fsdp",)),
        ("import os\n", ()),
        ("FLEET_STRATEGIES = os.environ['X']\n", ()),  # never evaluated
        ("def broken(:\n", ()),
        ("x = '\x00'\n", ()),
    ],
)
def test_a_scripts_declaration_is_read_without_running_it(tmp_path, source, declared):
    script = tmp_path / "train.py"
    script.write_text(source)
    assert declared_strategies(str(script)) == declared


def test_the_launch_form_says_in_one_line_when_to_pick_fsdp(db, cast):
    help_text = str(LaunchForm(user=cast["owner"]).fields["strategy"].help_text)
    assert "FSDP" in help_text and "too big for one GPU's memory" in help_text


@pytest.mark.django_db
def test_fsdp_with_a_script_that_does_not_declare_support_is_refused_before_anything_starts(
    cast, quiet_node, tmp_path, settings
):
    settings.RUN_SCRIPT_DIRS = [str(tmp_path)]
    plain, ready = tmp_path / "plain.py", tmp_path / "ready.py"
    plain.write_text("print('training')\n")
    ready.write_text('FLEET_STRATEGIES = ["ddp", "fsdp"]\n')

    def check(script):
        request = LaunchRequest(
            user=cast["owner"], workload="script", strategy="fsdp", script=str(script), gpus=gpus_of(quiet_node, 2)
        )
        return check_launch(request)

    plan, errors = check(plain)
    assert plan is None and "does not declare FSDP support" in errors["strategy"]
    assert 'FLEET_STRATEGIES = ["fsdp"]' in errors["strategy"]
    assert Run.objects.count() == 0 and queued_messages(quiet_node.hostname) == 0
    plan, errors = check(ready)
    assert errors == {} and plan.strategy == "fsdp"
