"""A real run's environment record: versions, driver, GPU models, command; two runs compared show what differs."""

import pytest

from inventory.models import Node
from tests.training.conftest import gpus_of, start_run, wait_for
from training.choices import RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_record_lists_torch_cuda_driver_and_gpu_models(cast, worker_node, client):
    Node.objects.filter(pk=worker_node.pk).update(driver_version="550.54.15")
    run = start_run(cast["owner"], gpus_of(worker_node, 1), epochs=1)

    run = wait_for(run, RunStatus.finished())

    env = run.environment
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert env["torch"].startswith("2.13") and env["packages"]["torch"] == env["torch"]
    assert env["python"].count(".") == 2
    assert env["cuda"] is None and env["cudnn"] is None  # the CPU build of torch in the test environment
    assert env["driver"] == "550.54.15"
    assert env["gpu_models"] == "1 × T4"
    assert env["node"] == worker_node.hostname and env["host"]
    client.force_login(cast["owner"])
    section = client.get(f"/runs/{run.pk}/").content.decode().split('id="environment"')[1].split("</dl>")[0]
    assert "<dt>cuda</dt><dd>none (CPU build)</dd>" in section and "<dt>cudnn</dt><dd>none (CPU build)</dd>" in section
    assert "<dt>driver</dt><dd>550.54.15</dd>" in section and f"torch {env['torch']}" in section


def test_comparing_two_runs_that_differ_in_hyperparameters_shows_only_those(cast, worker_node, client):
    gpu = gpus_of(worker_node, 1)
    first = start_run(cast["owner"], gpu, epochs=1, lr=0.003)
    second = start_run(cast["owner"], gpu, epochs=1, lr=0.002, batch_size=64)
    for run in (first, second):
        assert wait_for(run, RunStatus.finished()).status == RunStatus.SUCCEEDED, run.error
    client.force_login(cast["owner"])

    body = client.get(f"/runs/compare/?run={first.pk}&run={second.pk}").content.decode()
    section = body.split('id="environment-differences"')[1].split("</section>")[0]

    rows = [row.split("</td>")[0] for row in section.split("<tr><td>")[1:]]
    assert rows == ["hyperparameter batch_size", "hyperparameter lr"], section
    assert "0.003" in section and "0.002" in section and "64" in section
