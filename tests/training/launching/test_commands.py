"""A run of the researcher's own command: checked before anything is stored, stored as given."""

import pytest

from tests.training.conftest import gpus_of
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run

pytestmark = pytest.mark.django_db


def request_for(cast, node, **fields) -> LaunchRequest:
    return LaunchRequest(user=cast["owner"], workload="command", gpus=gpus_of(node, 1), **fields)


def test_a_command_with_its_workdir_and_variables_is_stored_as_given(cast, quiet_node):
    argv = ["python", "train.py", "--config", "my cfg.yaml", "--unknown-flag", 'say "hi"']
    request = request_for(cast, quiet_node, command=argv, workdir="/srv/lab", variables={"WANDB_MODE": "offline"})
    plan, errors = check_launch(request)
    assert not errors, errors
    run = Run.objects.get(pk=launch(plan).pk)
    assert (run.workload, run.command, run.shell_line) == ("command", argv, "")
    assert (run.workdir, run.variables, run.env_kind, run.hyperparameters) == (
        "/srv/lab",
        {"WANDB_MODE": "offline"},
        "fleet",
        {},
    )
    assert run.name == "python train.py --config · single"


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({}, "command", "Give the command"),
        ({"command": ["python"], "shell_line": "echo hi"}, "command", "not both"),
        ({"command": ["", "x"]}, "command", "empty"),
        ({"command": ["python", "a\x00b"]}, "command", "NUL"),
        ({"command": ["x" * 100_000]}, "command", "longer than"),
        ({"shell_line": "echo\x00"}, "shell_line", "NUL"),
        ({"command": ["python"], "variables": {"A=B": "1"}}, "variables", "not a variable name"),
        ({"command": ["python"], "variables": {"MY VAR": "1"}}, "variables", "not a variable name"),
        ({"command": ["python"], "workdir": "relative/dir"}, "workdir", "absolute"),
        ({"command": ["python"], "setup": "echo\n" * 10_000}, "setup", "lines"),
        ({"command": ["python"], "env_kind": "nix"}, "env_kind", "Unknown environment"),
        ({"command": ["python"], "env_ref": "/opt/env"}, "env_ref", "takes no path"),
    ],
)
def test_bad_commands_are_refused_by_field_and_nothing_is_stored(cast, quiet_node, fields, field, words):
    plan, errors = check_launch(request_for(cast, quiet_node, **fields))
    assert plan is None and words in errors.get(field, ""), errors
    assert not Run.objects.exists()


def test_a_built_in_workload_takes_no_command(cast, quiet_node):
    request = LaunchRequest(user=cast["owner"], workload="digits_cnn", gpus=gpus_of(quiet_node, 1), command=["ls"])
    plan, errors = check_launch(request)
    assert plan is None and "only with the workload 'command'" in errors["command"]


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("aws_secret_access_key", True),
        ("DB_PASSWORD", True),
        ("WANDB_API_KEY", True),
        ("WANDB_MODE", False),
        ("OMP_NUM_THREADS", False),
    ],
)
def test_secret_looking_names_are_masked(name, secret):
    from training.variables import SECRET_MASK, shown

    assert (shown({name: "v"})[name] == SECRET_MASK) is secret
