"""The launch form: it lists the fleet's GPUs, launches a checked run, and shows each refusal by its field."""

import pytest

from tests.training.conftest import gpus_of, queued_messages
from training.choices import RunStatus
from training.models import Run

pytestmark = pytest.mark.django_db


def post(client, node, **fields):
    data = {"workload": "digits_cnn", "strategy": "single", "epochs": "3", "gpus": [gpus_of(node, 1)[0].pk]}
    data.update(fields)
    return client.post("/runs/new/", data)


def test_the_form_lists_gpus_by_node_with_their_price(client, cast, quiet_node):
    client.force_login(cast["owner"])
    body = client.get("/runs/new/").content.decode()
    assert quiet_node.hostname in body and "GPU 1 · T4" in body and "$0.350/h" in body
    assert "digits_cnn" in body and "Estimated cost" in body


def test_launching_redirects_to_the_queued_run(client, cast, quiet_node, django_capture_on_commit_callbacks):
    client.force_login(cast["owner"])
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, quiet_node, name="first try", lr="0.01")

    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert (run.name, run.status, run.owner) == ("first try", RunStatus.QUEUED, cast["owner"])
    assert run.hyperparameters["lr"] == 0.01 and run.hyperparameters["epochs"] == 3
    assert queued_messages(quiet_node.hostname) == 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"lr": "0"}, "Learning rate must be greater than 0."),
        ({"lr": "fast"}, "Learning rate must be a number"),
        ({"batch_size": "100000"}, "larger than the training set"),
        ({"strategy": "ddp", "processes": "5"}, "more than the 1 GPUs"),
        ({"gpus": []}, "Choose GPUs, or a node"),
        ({"gpus": ["999999"]}, "Select a valid choice"),
        ({"workload": "script", "script": "/etc/passwd"}, "Select a valid choice"),
    ],
)
def test_bad_input_is_shown_on_the_form_and_nothing_starts(client, cast, quiet_node, fields, message):
    client.force_login(cast["owner"])
    response = post(client, quiet_node, **fields)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert Run.objects.count() == 0 and queued_messages(quiet_node.hostname) == 0


def test_launch_again_fills_the_form_with_a_runs_settings(client, cast, quiet_node):
    run = Run.objects.create(
        owner=cast["owner"],
        project=cast["project"],
        name="tuned",
        workload="digits_cnn",
        strategy="single",
        hyperparameters={"lr": 0.0042},
    )
    client.force_login(cast["teammate"])
    body = client.get(f"/runs/new/?again={run.pk}").content.decode()
    assert 'value="tuned"' in body and 'value="0.0042"' in body


def test_launch_again_ignores_a_run_the_user_may_not_see(client, cast, quiet_node):
    run = Run.objects.create(owner=cast["owner"], name="secret-name", workload="digits_cnn", strategy="single")
    client.force_login(cast["outsider"])
    assert "secret-name" not in client.get(f"/runs/new/?again={run.pk}").content.decode()


def test_a_script_outside_the_allowed_directories_is_refused(client, cast, quiet_node, settings, tmp_path):
    settings.RUN_SCRIPT_DIRS = [str(tmp_path)]
    client.force_login(cast["owner"])
    response = post(client, quiet_node, workload="script", script="/etc/passwd")
    assert "/etc/passwd is outside the allowed script directories" in response.content.decode()
    assert Run.objects.count() == 0
