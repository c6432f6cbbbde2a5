"""A real node worker runs profiled runs of real torch (and a script under cProfile) and keeps what they recorded."""

import gzip
import json
import marshal

import pytest

from tests.training.conftest import DIGITS_FAST, gpus_of, log_of, wait_for
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import RunProfile

pytestmark = pytest.mark.django_db(transaction=True)


def start_profiled(user, gpus, profiler, strategy="single", workload="digits_cnn", script="", **hyper):
    request = LaunchRequest(
        user=user,
        workload=workload,
        strategy=strategy,
        gpus=list(gpus),
        script=script,
        hyperparameters={**DIGITS_FAST, "epochs": 1, **hyper},
        profiler=profiler,
    )
    plan, errors = check_launch(request)
    assert not errors, errors
    return launch(plan)


def trace_of(profile: RunProfile) -> dict:
    return json.loads(gzip.decompress(bytes(profile.data)))


def test_a_profiled_run_keeps_a_chrome_trace_and_a_top_operators_table(cast, worker_node):
    run = start_profiled(cast["owner"], gpus_of(worker_node, 1), {"wait": 2, "warmup": 1, "active": 3})

    run = wait_for(run, RunStatus.finished())

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    profile = RunProfile.objects.get(run=run)
    assert profile.rank == 0 and profile.kind == "torch" and profile.note == ""
    events = trace_of(profile)["traceEvents"]
    assert len(events) > 100 and profile.size == len(gzip.decompress(bytes(profile.data)))
    assert sum(1 for event in events if str(event.get("name", "")).startswith("ProfilerStep#")) == 3
    operators = profile.summary["operators"]
    assert len(operators) >= 5 and all(row["self_cpu_us"] > 0 and row["calls"] >= 1 for row in operators)
    assert any(row["name"].startswith("aten::") for row in operators)
    split = profile.summary["split"]
    assert split["steps"] == 3 and split["total_us"] > 0 and split["compute_us"] > 0 and split["data_us"] > 0
    assert split["communication_us"] is None  # one process: nothing to communicate
    assert any("profile of rank 0 kept" in line for line in run.logs.values_list("line", flat=True))


def test_every_rank_of_a_ddp_run_is_profiled_with_its_communication(cast, worker_node):
    profiler = {"wait": 2, "warmup": 1, "active": 3, "ranks": "all"}
    run = start_profiled(cast["owner"], gpus_of(worker_node, 2), profiler, strategy="ddp")

    run = wait_for(run, RunStatus.finished())

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    profiles = list(RunProfile.objects.filter(run=run).order_by("rank"))
    assert [profile.rank for profile in profiles] == [0, 1]
    for profile in profiles:
        assert trace_of(profile)["traceEvents"]
        assert profile.summary["split"]["communication_us"] > 0
        names = [row["name"] for row in profile.summary["operators"]]
        assert any("allreduce" in name for name in names), names


def test_a_script_runs_under_cprofile_and_keeps_its_pstats(cast, worker_node, tmp_path, settings):
    settings.RUN_SCRIPT_DIRS = [str(tmp_path)]
    script = tmp_path / "plain.py"
    script.write_text(
        "import argparse\n"
        "def busy_loop(n):\n"
        "    return sum(i * i for i in range(n))\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--epochs', type=int)\n"
        "args, _ = parser.parse_known_args()\n"
        "print('total', busy_loop(200_000 * args.epochs))\n"
    )
    run = start_profiled(cast["owner"], gpus_of(worker_node, 1), {"ranks": "0"}, workload="script", script=str(script))

    run = wait_for(run, RunStatus.finished())

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    profile = RunProfile.objects.get(run=run)
    assert profile.kind == "cprofile"
    stats = marshal.loads(gzip.decompress(bytes(profile.data)))  # the pstats file format
    assert any(name == "busy_loop" for (_, _, name) in stats)
    functions = profile.summary["functions"]
    assert any(row["function"] == "<genexpr>" and row["own_s"] > 0 for row in functions), functions
    assert any("total" in line for line in run.logs.values_list("line", flat=True))
