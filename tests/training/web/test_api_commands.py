"""The runs API launches the researcher's own command: refusals by field, nothing stored, secrets never shown."""

import pytest
from rest_framework.test import APIClient

from tests.training.conftest import gpus_of, queued_messages
from training import environments
from training.models import Run
from training.variables import SECRET_MASK

pytestmark = pytest.mark.django_db

ARGV = ["python", "train.py", "--config", "my cfg.yaml", "--unknown-flag", 'say "hi"', "  spaced  "]


@pytest.fixture
def api(cast):
    client = APIClient()
    client.force_authenticate(cast["owner"])
    return client


def command_body(node, **extra):
    body = {"workload": "command", "gpus": [gpus_of(node, 1)[0].uuid], "command": ARGV}
    return {**body, **extra}


def test_a_command_run_is_stored_as_sent_and_queued(api, quiet_node, django_capture_on_commit_callbacks):
    body = command_body(
        quiet_node, workdir="/srv/lab/repo", variables={"WANDB_MODE": "offline"}, setup="pip install -e .\n"
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/runs/", body, format="json")

    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert (run.workload, run.command, run.shell_line, run.workdir) == ("command", ARGV, "", "/srv/lab/repo")
    assert (run.variables, run.setup, run.env_kind, run.env_ref) == (
        {"WANDB_MODE": "offline"},
        "pip install -e .\n",
        "fleet",
        "",
    )
    reply = response.json()
    assert reply["command"] == ARGV and reply["variables"] == {"WANDB_MODE": "offline"}
    assert (reply["workdir"], reply["env_kind"], reply["env_ref"], reply["shell_line"]) == (
        "/srv/lab/repo",
        "fleet",
        "",
        "",
    )
    assert queued_messages(quiet_node.hostname) == 1


def test_a_shell_line_is_stored_as_one_line(api, quiet_node):
    response = api.post(
        "/api/runs/", command_body(quiet_node, command=None, shell_line="echo $HOME && ls | wc -l"), format="json"
    )
    # null is not "absent": the schema says a list, so null is refused by name.
    assert response.status_code == 400 and "command" in response.json()["errors"]
    body = command_body(quiet_node, shell_line="echo $HOME && ls | wc -l")
    del body["command"]
    response = api.post("/api/runs/", body, format="json")
    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert (run.command, run.shell_line) == ([], "echo $HOME && ls | wc -l")


def test_secret_looking_values_are_masked_in_every_answer(api, quiet_node):
    secrets = {"HF_TOKEN": "hf_live_value", "WANDB_API_KEY": "k-123", "db_password": "hunter2", "SEED": "7"}
    response = api.post("/api/runs/", command_body(quiet_node, variables=secrets), format="json")
    assert response.status_code == 201, response.json()
    masked = {"HF_TOKEN": SECRET_MASK, "WANDB_API_KEY": SECRET_MASK, "db_password": SECRET_MASK, "SEED": "7"}
    pk = response.json()["id"]
    answers = [response, api.get(f"/api/runs/{pk}/"), api.get("/api/runs/")]
    for answer in answers:
        text = answer.content.decode()
        assert not any(value in text for value in ("hf_live_value", "k-123", "hunter2")), text
    assert answers[0].json()["variables"] == masked and answers[1].json()["variables"] == masked
    assert answers[2].json()["results"][0]["variables"] == masked
    assert Run.objects.get().variables == secrets  # kept for the node worker, only never shown


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"command": []}, "command", "Give the command"),
        ({"command": ["x" * 100_000]}, "command", "longer than"),
        ({"command": ["python", "a\x00b"]}, "command", "NUL"),
        ({"command": "python train.py"}, "command", "list of words"),
        ({"command": ["python", 3]}, "command", "list of words"),
        ({"command": {"0": "python"}}, "command", "list of words"),
        ({"command": ["python"] * 1001}, "command", "at most 1,000"),
        ({"command": ["python"], "shell_line": "echo hi"}, "command", "not both"),
        ({"shell_line": False}, "shell_line", "must be text"),
        ({"variables": {"A=B": "1"}}, "variables", "not a variable name"),
        ({"variables": {"MY VAR": "1"}}, "variables", "not a variable name"),
        ({"variables": {"N": 1}}, "variables", "must be text"),
        ({"variables": ["N=1"]}, "variables", "must be an object"),
        ({"variables": {f"V{i}": "" for i in range(201)}}, "variables", "At most 200"),
        ({"workdir": "relative/dir"}, "workdir", "absolute"),
        ({"workdir": 0}, "workdir", "must be text"),
        ({"workdir": "/" + "d" * 1000}, "workdir", "longer than"),
        ({"setup": "echo\n" * 10_000}, "setup", "lines"),
        ({"setup": ["pip install x"]}, "setup", "must be text"),
        ({"env_kind": "nix"}, "env_kind", "Unknown environment"),
        ({"env_kind": ""}, "env_kind", "Unknown environment"),
        ({"env_ref": "/opt/env"}, "env_ref", "takes no path"),
        ({"env_ref": "/" + "e" * 1000}, "env_ref", "longer than"),
        ({"env_ref": 7}, "env_ref", "must be text"),
        ({"setup": None}, "setup", "may not be null"),
    ],
)
def test_bad_command_fields_are_a_400_naming_the_field_and_nothing_is_stored(api, quiet_node, extra, field, words):
    response = api.post("/api/runs/", command_body(quiet_node, **extra), format="json")
    assert response.status_code == 400, response.json()
    assert words in " ".join(response.json()["errors"][field]), response.json()
    assert Run.objects.count() == 0 and queued_messages(quiet_node.hostname) == 0


def test_a_built_in_workload_refuses_command_fields(api, quiet_node):
    body = {"workload": "digits_cnn", "gpus": [gpus_of(quiet_node, 1)[0].uuid], "variables": {"A": "1"}}
    response = api.post("/api/runs/", body, format="json")
    assert (
        response.status_code == 400 and "only with the workload 'command'" in response.json()["errors"]["variables"][0]
    )
    assert Run.objects.count() == 0


def test_the_schema_documents_the_command_fields(api):
    schema = api.get("/api/schema/?format=json").json()["components"]["schemas"]
    launch, run = schema["Launch"]["properties"], schema["Run"]["properties"]
    assert launch["command"]["type"] == "array" and launch["command"]["items"]["type"] == "string"
    assert launch["command"]["maxItems"] == 1000 and launch["setup"]["maxLength"] == 20_000
    assert launch["variables"]["additionalProperties"] == {"type": "string", "maxLength": 10_000}
    kinds = schema[launch["env_kind"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]
    assert kinds["enum"] == list(environments.names())
    assert {"command", "shell_line", "workdir", "variables", "setup", "env_kind", "env_ref"} <= set(run)
    assert "nullable" not in launch["command"] and "nullable" not in launch["setup"]
