"""Profiler options at launch: off by default, checked before anything is queued, stored, given to the node."""

import pytest
from rest_framework.test import APIClient

from tests.training.conftest import gpus_of, queued_messages
from training.models import Run
from training.node.commands import node_argv

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(cast):
    client = APIClient()
    client.force_authenticate(cast["owner"])
    return client


def launch_body(node, **extra):
    body = {"workload": "digits_cnn", "gpus": [gpus_of(node, 1)[0].uuid], "hyperparameters": {"epochs": 2}}
    return {**body, **extra}


def test_a_run_is_not_profiled_unless_asked(api, quiet_node):
    response = api.post("/api/runs/", launch_body(quiet_node), format="json")

    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert response.json()["profiler"] == {} and run.profiler == {}
    assert not any(arg.startswith("--profile") for arg in node_argv(run, run.nodes.get(), 1))


def test_a_profiled_launch_stores_the_window_and_passes_it_to_the_workload(api, quiet_node):
    profiler = {"wait": 3, "warmup": 1, "active": 4, "ranks": "all"}
    response = api.post("/api/runs/", launch_body(quiet_node, strategy="ddp", profiler=profiler), format="json")

    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert run.profiler == {"kind": "torch", **profiler}
    argv = node_argv(run, run.nodes.get(), 1)
    at = argv.index("--profile")
    assert argv[at : at + 9] == [
        "--profile",
        "--profile-wait",
        "3",
        "--profile-warmup",
        "1",
        "--profile-active",
        "4",
        "--profile-ranks",
        "all",
    ]


def test_defaults_fill_the_window_left_out(api, quiet_node):
    response = api.post("/api/runs/", launch_body(quiet_node, profiler={"ranks": "0"}), format="json")

    assert response.status_code == 201, response.json()
    assert Run.objects.get().profiler == {"kind": "torch", "wait": 5, "warmup": 2, "active": 5, "ranks": "0"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"profiler": {"active": 0}}, "active steps must be between 1 and 50"),
        ({"profiler": {"active": 51}}, "active steps must be between 1 and 50"),
        ({"profiler": {"wait": -1}}, "wait must be between 0 and 10000"),
        ({"profiler": {"warmup": 101}}, "warm-up must be between 0 and 100"),
        ({"profiler": {"wait": 1.5}}, "whole number of steps"),
        ({"profiler": {"wait": True}}, "whole number of steps"),
        ({"profiler": {"active": "five"}}, "whole number of steps"),
        ({"profiler": {"ranks": "1"}}, "ranks must be '0' (rank 0 only) or 'all'"),
        ({"profiler": {"every": 2}}, "takes no option 'every'"),
        ({"profiler": {"kind": "cprofile"}}, "digits_cnn is profiled with torch"),
        ({"profiler": {"wait": 10000}}, "longer than the run (90 steps per process)"),
        ({"profiler": {"ranks": "all"}, "strategy": "hogwild"}, "A Hogwild run cannot be profiled"),
        ({"profiler": {"ranks": "0"}, "workload": "burnin", "hyperparameters": {}}, "no training loop to profile"),
    ],
)
def test_profiler_options_out_of_range_are_a_400_and_nothing_is_queued(api, quiet_node, extra, message):
    response = api.post("/api/runs/", launch_body(quiet_node, **extra), format="json")

    assert response.status_code == 400, response.json()
    assert message in " ".join(response.json()["errors"]["profiler"])
    assert Run.objects.count() == 0 and queued_messages(quiet_node.hostname) == 0


def test_profiler_options_that_are_not_an_object_are_a_400(api, quiet_node):
    response = api.post("/api/runs/", launch_body(quiet_node, profiler=[1, 2]), format="json")

    assert response.status_code == 400
    assert "profiler" in response.json()["errors"]
    assert Run.objects.count() == 0


def test_a_sweep_cannot_smuggle_profiler_options_in_as_a_hyperparameter(api, quiet_node):
    body = {
        "workload": "digits_cnn",
        "mode": "grid",
        "space": {"lr": [0.001, 0.01]},
        "base": {"profiler": {"active": 3}},
        "gpus": [gpus_of(quiet_node, 1)[0].uuid],
    }
    response = api.post("/api/sweeps/", body, format="json")

    assert response.status_code == 400, response.json()
    assert "profiler" in str(response.json()["errors"])
    assert Run.objects.count() == 0


def test_a_script_is_wrapped_in_cprofile_under_every_strategy_that_runs_scripts(cast, quiet_node, tmp_path, settings):
    settings.RUN_SCRIPT_DIRS = [str(tmp_path)]
    script = tmp_path / "train.py"
    script.write_text("print('hello')\n")
    client = APIClient()
    client.force_authenticate(cast["owner"])
    for strategy in ("single", "ddp"):
        body = launch_body(quiet_node, workload="script", script=str(script), strategy=strategy)
        response = client.post("/api/runs/", {**body, "profiler": {"ranks": "all"}}, format="json")
        assert response.status_code == 201, response.json()
        run = Run.objects.get(pk=response.json()["id"])
        assert run.profiler == {"kind": "cprofile", "ranks": "all"}
        argv = node_argv(run, run.nodes.get(), 1)
        at = argv.index("training.profiling.cprofile_run")
        assert argv[at + 1 : at + 3] == ["--all-ranks", str(script)] and "--epochs" in argv[at + 3 :]


def test_a_script_under_cprofile_takes_no_step_window(cast, quiet_node, tmp_path, settings):
    settings.RUN_SCRIPT_DIRS = [str(tmp_path)]
    script = tmp_path / "train.py"
    script.write_text("print('hello')\n")
    client = APIClient()
    client.force_authenticate(cast["owner"])
    body = launch_body(quiet_node, workload="script", script=str(script), profiler={"active": 3})

    response = client.post("/api/runs/", body, format="json")

    assert response.status_code == 400
    assert "cProfile records the whole script" in " ".join(response.json()["errors"]["profiler"])
