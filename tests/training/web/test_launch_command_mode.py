"""The launch form's Command mode: the command box split into words or kept as a shell line, variables read
from NAME=value lines, each refusal shown by its field, and Launch again filling it back in."""

import pytest
from django.utils import timezone

from tests.training.conftest import gpus_of, queued_messages
from training.models import Run, WorkerPresence
from training.variables import SECRET_MASK
from training.web.node_environments import by_kind

pytestmark = pytest.mark.django_db


def post(client, node, **fields):
    data = {"mode": "command", "workload": "digits_cnn", "strategy": "single", "env_kind": "fleet"}
    data.update({"gpus": [gpus_of(node, 1)[0].pk], **fields})
    return client.post("/runs/new/", data)


def field_errors(response, name: str) -> str:
    return " ".join(response.context["form"].errors.get(name, []))


def test_a_command_is_split_like_a_shell_and_stored_as_words(client, cast, quiet_node):
    client.force_login(cast["owner"])
    text = """python train.py --config "my cfg.yaml" --note 'say "hi"' --unknown-flag"""
    variables = "WANDB_MODE=offline\r\n\r\nHF_TOKEN=hf_abc=def\r\n"
    response = post(client, quiet_node, command=text, variables=variables, workdir=" /srv/lab ", setup="pip install .")

    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    argv = ["python", "train.py", "--config", "my cfg.yaml", "--note", 'say "hi"', "--unknown-flag"]
    assert (run.workload, run.command, run.shell_line, run.workdir) == ("command", argv, "", "/srv/lab")
    assert run.variables == {"WANDB_MODE": "offline", "HF_TOKEN": "hf_abc=def"}
    assert (run.setup, run.hyperparameters, run.profiler) == ("pip install .", {}, {})


def test_the_shell_line_box_stores_the_line_whole(client, cast, quiet_node):
    client.force_login(cast["owner"])
    post(client, quiet_node, command="  cd src && python train.py | tee log.txt ", as_shell="on")
    run = Run.objects.get()
    assert (run.command, run.shell_line) == ([], "cd src && python train.py | tee log.txt")


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"command": ""}, "command", "Give the command"),
        ({"command": "python 'unclosed"}, "command", "cannot be split"),
        ({"command": "x" * 100_000}, "command", "longer than"),
        ({"command": "echo hi", "as_shell": "on", "setup": "echo\n" * 10_000}, "setup", "lines"),
        ({"command": "python", "variables": "MY VAR=1"}, "variables", "not a variable name"),
        ({"command": "python", "variables": "JUST_A_NAME"}, "variables", "write NAME=value"),
        ({"command": "python", "variables": "A=1\nA=2"}, "variables", "set twice"),
        ({"command": "python", "variables": f"HF_TOKEN={SECRET_MASK}"}, "variables", "type the value of HF_TOKEN"),
        ({"command": "python", "workdir": "relative"}, "workdir", "absolute"),
        ({"command": "python", "env_kind": "nix"}, "env_kind", "Select a valid choice"),
        ({"command": "python", "env_ref": "/opt/venv"}, "env_ref", "takes no path"),
        ({"command": "python", "mode": "anything"}, "mode", "Select a valid choice"),
    ],
)
def test_each_refusal_is_shown_by_its_field_and_nothing_is_stored(client, cast, quiet_node, fields, field, words):
    client.force_login(cast["owner"])
    response = post(client, quiet_node, **fields)
    assert response.status_code == 200
    assert words in field_errors(response, field), response.context["form"].errors
    assert Run.objects.count() == 0 and queued_messages(quiet_node.hostname) == 0


def test_the_preset_mode_still_launches_a_built_in_workload(client, cast, quiet_node):
    client.force_login(cast["owner"])
    post(client, quiet_node, mode="preset", epochs="2", command="ignored in preset mode")
    run = Run.objects.get()
    assert (run.workload, run.command, run.hyperparameters["epochs"]) == ("digits_cnn", [], 2)


def test_launch_again_fills_command_mode_and_leaves_secret_values_out(client, cast, quiet_node):
    run = Run.objects.create(
        owner=cast["owner"],
        name="mine",
        workload="command",
        strategy="single",
        command=["python", "train.py", "--name", "two words"],
        workdir="/srv/lab",
        variables={"WANDB_MODE": "offline", "HF_TOKEN": "hf_secret_value"},
        setup="pip install -e .",
    )
    client.force_login(cast["owner"])
    form = client.get(f"/runs/new/?again={run.pk}").context["form"]
    assert form.command_mode and form["command"].value() == "python train.py --name 'two words'"
    assert sorted(form["variables"].value().splitlines()) == ["HF_TOKEN=", "WANDB_MODE=offline"]
    assert (form["workdir"].value(), form["setup"].value(), form["as_shell"].value()) == (
        "/srv/lab",
        "pip install -e .",
        False,
    )
    assert "hf_secret_value" not in client.get(f"/runs/new/?again={run.pk}").content.decode()


def test_launch_again_of_a_shell_line_ticks_the_box(client, cast, quiet_node):
    run = Run.objects.create(owner=cast["owner"], name="s", workload="command", strategy="single", shell_line="ls | wc")
    client.force_login(cast["owner"])
    form = client.get(f"/runs/new/?again={run.pk}").context["form"]
    assert (form["command"].value(), form["as_shell"].value()) == ("ls | wc", True)


def test_the_form_offers_what_each_node_reported(client, cast, quiet_node):
    WorkerPresence.objects.create(
        node=quiet_node,
        seen_at=timezone.now(),
        environments={"venv": ["/srv/envs/x"], "nix": ["y"]},
    )
    client.force_login(cast["owner"])
    environments = client.get("/runs/new/").context["environments"]
    assert environments["offered"] == {quiet_node.hostname: {"venv": ["/srv/envs/x"]}}
    assert environments["needs_ref"]["fleet"] is False and environments["needs_ref"]["venv"] is True
    assert environments["host_of_node"][str(quiet_node.pk)] == quiet_node.hostname


@pytest.mark.parametrize(
    ("report", "kinds"),
    [
        ({"fleet": ["/a", "/a", 3, ""]}, {"fleet": ["/a"]}),
        ([{"kind": "fleet", "ref": "/b"}], {}),
        ({"unknown-kind": ["/d"]}, {}),
        (None, {}),
        ("text", {}),
    ],
)
def test_a_nodes_report_is_read_and_junk_is_left_out(report, kinds):
    assert by_kind(report) == kinds
