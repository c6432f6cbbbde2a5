"""A researcher's own command on a real node worker: in a venv made here, as a shell line, after a setup step,
under DDP and their own launcher, with a secret that never shows."""

import json
import subprocess
import sys

import pytest

from tests.support.node_workers import FAST_RUN_SETTINGS, run_processes, running_node_worker
from tests.support.processes import BASE_DIR
from tests.training.conftest import add_node, end_every_run, gpus_of, log_of, wait_for
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run
from training.variables import SECRET_MASK

pytestmark = pytest.mark.django_db(transaction=True)

HELPER = BASE_DIR / "clients" / "gpu_fleet_events"
SCRIPT = """\
import json, os, sys
from gpu_fleet_events import log
print("prefix=" + sys.prefix)
print("argv=" + json.dumps(sys.argv[1:]))
print("greeting=" + os.environ["GREETING"])
log(step=3, loss=0.5, accuracy=0.75)
"""
DDP_SCRIPT = """\
import os
import sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
total = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(total)
said = f"rank {dist.get_rank()} of {dist.get_world_size()}: sum {total.item():g} name {sys.argv[2]}\\n"
os.write(1, said.encode())  # one write, so the two ranks' lines never interleave
dist.destroy_process_group()
"""


def run_quietly(*argv, cwd=None) -> str:
    return subprocess.run([str(word) for word in argv], check=True, capture_output=True, text=True, cwd=cwd).stdout


@pytest.fixture(scope="module")
def env_root(tmp_path_factory):
    """An allowed environment root holding a venv made here, with the events helper from a wheel built here."""
    root = tmp_path_factory.mktemp("envs")
    wheels = tmp_path_factory.mktemp("wheels")
    run_quietly(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, HELPER)
    venv = root / "lab" / "plain"
    run_quietly(sys.executable, "-m", "venv", venv)
    wheel = next(wheels.glob("gpu_fleet_events-*.whl"))
    run_quietly(venv / "bin" / "python", "-m", "pip", "install", "--no-index", "--disable-pip-version-check", wheel)
    return root


@pytest.fixture(scope="module")
def command_worker(django_db_setup, django_db_blocker, tmp_path_factory, env_root):
    settings = {**FAST_RUN_SETTINGS, "RUN_ENV_DIRS": str(env_root)}
    with running_node_worker("node-cmd", django_db_blocker, tmp_path_factory, settings) as worker:
        yield worker


@pytest.fixture
def command_node(command_worker, gpu_models, settings, env_root):
    settings.RUN_ENV_DIRS = [str(env_root)]
    node = add_node(command_worker.hostname)
    yield node
    end_every_run()


def start_command(cast, gpus, strategy="single", processes=None, **fields) -> Run:
    request = LaunchRequest(
        user=cast["owner"], workload="command", strategy=strategy, gpus=list(gpus), processes=processes, **fields
    )
    plan, errors = check_launch(request)
    assert not errors, errors
    return launch(plan)


def finished(run: Run) -> Run:
    run = wait_for(run, RunStatus.finished(), timeout_s=120)
    assert not run_processes(run)
    return run


def lines(run: Run) -> list[str]:
    return list(run.logs.order_by("id").values_list("line", flat=True))


@pytest.fixture
def repo(tmp_path):
    """A working directory that is a git repository with the script committed."""
    (tmp_path / "train.py").write_text(SCRIPT)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    run_quietly("git", "init", "-q", cwd=tmp_path)
    run_quietly(*git, "add", "train.py", cwd=tmp_path)
    run_quietly(*git, "commit", "-qm", "train", cwd=tmp_path)
    return tmp_path


def test_a_script_in_a_venv_gets_its_words_exactly_and_its_curve_point_reaches_the_run(
    cast, command_node, env_root, repo
):
    venv = env_root / "lab" / "plain"
    args = ["--config", "my cfg.yaml", 'say "hi"', "--unknown-flag=1", "it's", "$HOME"]
    run = start_command(
        cast,
        gpus_of(command_node, 1),
        command=["python", "train.py", *args],
        workdir=str(repo),
        variables={"GREETING": "hello there"},
        env_kind="venv",
        env_ref=str(venv),
    )

    run = finished(run)

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    shown = lines(run)
    assert f"prefix={venv}" in shown
    assert "argv=" + json.dumps(args) in shown
    assert "greeting=hello there" in shown
    point = run.metrics.get()
    assert (point.step, point.loss, point.accuracy) == (3, 0.5, 0.75)
    record = run.environment
    assert record["command"] == [str(venv / "bin" / "python"), "train.py", *args]
    assert record["workdir"] == str(repo) and record["variables"] == ["GREETING"]
    assert record["env"]["kind"] == "venv" and record["env"]["python"] == str(venv / "bin" / "python")
    assert record["env"]["version"] == f"Python {sys.version.split()[0]}"
    # pip freeze names a package installed from a file by its wheel (PEP 610).
    assert any(line.startswith("gpu-fleet-events @ file://") for line in record["env"]["packages"])
    assert not any(line.lower().startswith("torch") for line in record["env"]["packages"])
    assert record["git_commit"] == run_quietly("git", "rev-parse", "HEAD", cwd=repo).strip()
    assert record["git_dirty"] is False


def test_a_shell_line_runs_in_bash_in_the_runs_own_directory(cast, command_node):
    line = 'echo "run:$FLEET_RUN_ID dir:$(basename "$PWD") ${BASH_VERSION:+bash}"; echo "$GREETING" | tr a-z A-Z'
    run = start_command(cast, gpus_of(command_node, 1), shell_line=line, variables={"GREETING": "quiet"})

    run = finished(run)

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    assert lines(run) == [f"run:{run.pk} dir:run-{run.uuid} bash", "QUIET"]
    assert run.environment["command"] == ["bash", "-lc", line] and run.environment["env"]["kind"] == "fleet"


def test_a_setup_step_runs_first_in_its_own_section(cast, command_node, tmp_path):
    run = start_command(
        cast,
        gpus_of(command_node, 1),
        shell_line="cat prepared.txt",
        setup="echo preparing\necho ready > prepared.txt",
        workdir=str(tmp_path),
    )

    run = finished(run)

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    assert lines(run) == ["── setup ──", "preparing", "── command ──", "ready"]


def test_a_failing_setup_fails_the_run_and_the_command_never_starts(cast, command_node, tmp_path):
    run = start_command(
        cast,
        gpus_of(command_node, 1),
        command=["touch", "ran.txt"],
        setup="echo trying\nexit 3",
        workdir=str(tmp_path),
    )

    run = finished(run)

    assert run.status == RunStatus.FAILED and run.error == "setup failed (exit 3)"
    assert lines(run) == ["── setup ──", "trying"]
    assert not (tmp_path / "ran.txt").exists()


def test_ddp_starts_the_script_through_the_environments_torchrun(cast, command_node, tmp_path):
    (tmp_path / "ddp.py").write_text(DDP_SCRIPT)
    run = start_command(
        cast,
        gpus_of(command_node, 2),
        strategy="ddp",
        command=["python", "ddp.py", "--name", "two words"],
        workdir=str(tmp_path),
    )

    run = finished(run)

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    said = sorted(line.split("]:")[-1].strip() for line in lines(run) if "sum" in line)
    assert said == ["rank 0 of 2: sum 3 name two words", "rank 1 of 2: sum 3 name two words"]
    command = run.environment["command"]
    assert command[1:3] == ["-m", "torch.distributed.run"] and command[-3:] == ["ddp.py", "--name", "two words"]


def test_the_own_launcher_strategy_tells_the_command_where_the_nodes_are(cast, command_node):
    line = "env | grep -E '^(FLEET_NUM_NODES|FLEET_NODE_RANK|FLEET_NODE_IPS|FLEET_GPUS_PER_NODE|MASTER_)' | sort"
    run = start_command(cast, gpus_of(command_node, 2), strategy="launcher", shell_line=line)

    run = finished(run)

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    told = dict(line.split("=", 1) for line in lines(run))
    port = told.pop("MASTER_PORT")
    assert told == {
        "FLEET_GPUS_PER_NODE": "2",
        "FLEET_NODE_IPS": "127.0.0.1",
        "FLEET_NODE_RANK": "0",
        "FLEET_NUM_NODES": "1",
        "MASTER_ADDR": "127.0.0.1",
    }
    assert run.rendezvous == f"127.0.0.1:{port}" and int(port) > 0


def test_hogwild_starts_the_command_once_with_the_workers_it_asked_for(cast, command_node):
    run = start_command(
        cast, gpus_of(command_node, 1), strategy="hogwild", processes=2, shell_line="echo workers=$FLEET_WORKERS"
    )

    run = finished(run)

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    assert lines(run) == ["workers=2"]


def test_a_secret_value_never_shows_and_is_wiped_when_the_run_ends(cast, command_node, command_worker):
    secret = "hf-sekrit-0123456789"
    code = "import os, sys; print('token', os.environ['HF_TOKEN'], sys.argv[1], len(os.environ['HF_TOKEN']))"
    run = start_command(
        cast,
        gpus_of(command_node, 1),
        command=["python", "-c", code, secret],
        variables={"HF_TOKEN": secret, "GREETING": "hi"},
    )

    run = finished(run)

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    assert lines(run) == [f"token {SECRET_MASK} {SECRET_MASK} {len(secret)}"]
    assert run.variables == {"HF_TOKEN": SECRET_MASK, "GREETING": "hi"}
    assert run.environment["command"][-1] == SECRET_MASK and run.environment["variables"] == ["GREETING", "HF_TOKEN"]
    assert secret not in json.dumps(run.environment) + json.dumps(list(run.nodes.values_list("environment", flat=True)))
    assert f"run {run.pk}: started" in command_worker.log_text() and secret not in command_worker.log_text()
