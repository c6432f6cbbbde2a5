"""fleet run, logs, ps, kill, cancel against a real node worker: the exit code says how the run ended, and an
ended run leaves no process behind."""

import textwrap

import pytest
from django.utils import timezone

from inventory.choices import NodeStatus
from tests.monitoring.processes.test_end_a_runs_process import report_run_processes
from tests.support.gpus import set_state
from tests.support.node_workers import wait_until_no_run_processes
from tests.training import conftest as run_fixtures
from tests.training.conftest import wait_until
from training.choices import RunStatus
from training.models import Run
from training.web.api import LaunchSerializer

pytestmark = pytest.mark.django_db(transaction=True)
node_worker = run_fixtures.node_worker
worker_node = run_fixtures.worker_node
FAST = ["--param", "epochs=4", "--param", "batch_size=32", "--param", "lr=0.003"]


@pytest.fixture
def online(worker_node):
    """The worker's node as a reporting agent leaves it: online, each GPU sampled just now."""
    worker_node.status, worker_node.last_seen = NodeStatus.ONLINE, timezone.now()
    worker_node.save()
    for gpu in worker_node.gpus.all():
        set_state(gpu, last_sample_at=timezone.now(), util_gpu=0.0, mem_used_mib=0.0, processes=[])
    return worker_node


def test_run_follow_prints_the_log_and_exits_0_when_the_run_succeeded(fleet, cast, online):
    fleet.logged_in(cast["owner"])

    answer = fleet("run", "--workload", "digits_cnn", "--gpus", "1", "--node", online.hostname, *FAST, "--follow")

    assert answer.code == 0, answer.out + answer.err
    run = Run.objects.get()
    assert run.status == RunStatus.SUCCEEDED
    assert answer.out.splitlines()[1:] == list(run.logs.order_by("id").values_list("line", flat=True))
    assert f"Run #{run.pk} succeeded" in answer.err
    shown = fleet("show", str(run.pk), "-o", "json").json()
    assert shown["status"] == "succeeded" and shown["gpus"][0]["node"] == online.hostname
    assert [r["id"] for r in fleet("runs", "--mine", "-o", "json").json()] == [run.pk]


def test_kill_on_a_runs_process_ends_the_run_and_its_follower_exits_1(fleet, cast, online):
    fleet.logged_in(cast["owner"])
    long_ddp = ["--workload", "digits_cnn", "--gpus", "2", "--strategy", "ddp", "--param", "epochs=500"]
    made = fleet("run", *long_ddp, "-o", "json")
    assert made.code == 0, made.err
    run = Run.objects.get(pk=made.json()["id"])
    follower = fleet.start("logs", str(run.pk), "-f")
    wait_until(lambda: run.metrics.exists(), timeout_s=180, what="the run's first step")
    wait_until(lambda: report_run_processes(online) or any(g.state.processes for g in online.gpus.all()), 60)

    rows = fleet("ps", "--user", "me", "-o", "json").json()
    assert {row["run"] for row in rows} == {run.pk}
    killed = fleet("kill", f"{rows[0]['pid']}@{online.hostname}")

    assert killed.code == 0, killed.err
    assert f"this ends run #{run.pk}" in killed.out and f"Run #{run.pk} is cancelled." in killed.out
    assert follower.wait(timeout=60) == 1
    assert f"Run #{run.pk} cancelled" in follower.stderr.read()
    assert not wait_until_no_run_processes(run)


def test_cancel_waits_until_no_process_of_the_run_is_left(fleet, other_fleet, cast, online):
    fleet.logged_in(cast["owner"])
    other_fleet.logged_in(cast["teammate"])
    made = fleet("run", "--workload", "digits_cnn", "--gpus", "1", "--param", "epochs=500", "-o", "json").json()
    run = Run.objects.get(pk=made["id"])
    wait_until(lambda: run.metrics.exists(), timeout_s=180, what="the run's first step")

    refused = other_fleet("cancel", str(run.pk))
    cancelled = fleet("cancel", str(run.pk))

    assert refused.code == 1 and "Only the owner" in refused.err
    assert cancelled.code == 0 and f"Run #{run.pk} cancelled" in cancelled.out
    assert not wait_until_no_run_processes(run, timeout_s=5)


@pytest.mark.parametrize(
    "args",
    [
        ["--gpus", "0", "--", "python", "train.py"],
        ["--env", "NOVALUE", "--", "python", "train.py"],
        ["--gpus", "1", "--"],
        ["--gpus", "1"],
    ],
)
def test_bad_run_input_is_one_line_and_starts_nothing(fleet, cast, args):
    fleet.logged_in(cast["owner"])

    answer = fleet("run", *args)

    assert answer.code in (1, 2) and len(answer.err.strip().splitlines()) == 1, answer.err
    assert not Run.objects.exists()


@pytest.mark.skipif("command" not in LaunchSerializer().fields, reason="the runs API does not take commands yet")
def test_a_failing_command_exits_1_with_its_exit_status_and_its_words_kept_apart(fleet, cast, online, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("import sys\nprint(sys.argv[1:], flush=True)\nsys.exit(3)\n"))
    fleet.logged_in(cast["owner"])

    answer = fleet("run", "--gpus", "1", "--follow", "--", "python", str(script), "--flag", "a b")

    assert answer.code == 1, answer.out + answer.err
    assert "['--flag', 'a b']" in answer.out
    assert "failed (exit status 3)" in answer.err
