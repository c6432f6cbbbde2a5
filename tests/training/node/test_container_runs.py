"""A command run in a container image through a real node worker and a real podman: its output arrives, its
process inside is the run's on its GPU, and Cancel stops and removes the container with nothing left."""

import subprocess

import pytest
from django.db import connection

from monitoring.agent.localruns import LocalRuns
from tests.support.containers import IMAGE, container_names, podman_for_tests
from tests.support.node_workers import FAST_RUN_SETTINGS, running_node_worker, wait_until_no_run_processes
from tests.training.conftest import add_node, end_every_run, gpus_of, log_of, wait_for, wait_until
from training.cancel import request_cancel
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run

pytestmark = pytest.mark.django_db(transaction=True)

CONTAINER_SETTINGS = {
    "RUN_CONTAINER_RUNTIME": "podman",
    "RUN_CONTAINER_IMAGES": "localhost/fleet-test/busybox",
    "RUN_CONTAINER_GPUS": "false",  # no GPUs here, and no CDI specification for them
}


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    """The test's podman, seen by this process (to inspect) and handed to the node worker."""
    with podman_for_tests(tmp_path_factory.mktemp("podman")) as configured:
        yield configured


@pytest.fixture(scope="module")
def container_worker(django_db_setup, django_db_blocker, tmp_path_factory, podman):
    settings = {**FAST_RUN_SETTINGS, **CONTAINER_SETTINGS, **podman.env}
    with running_node_worker("node-ctr", django_db_blocker, tmp_path_factory, settings) as worker:
        yield worker


@pytest.fixture
def container_node(container_worker, gpu_models, settings):
    settings.RUN_CONTAINER_IMAGES = [CONTAINER_SETTINGS["RUN_CONTAINER_IMAGES"]]
    settings.RUN_CONTAINER_GPUS = False
    node = add_node(container_worker.hostname)
    yield node
    end_every_run()


def start_in_image(cast, node, command: list[str]) -> Run:
    request = LaunchRequest(
        user=cast["owner"],
        workload="command",
        strategy="single",
        gpus=gpus_of(node, 1),
        command=command,
        env_kind="image",
        env_ref=IMAGE,
    )
    plan, errors = check_launch(request)
    assert not errors, errors
    return launch(plan)


def lines(run: Run) -> list[str]:
    return list(run.logs.order_by("id").values_list("line", flat=True))


def containers_of(run: Run) -> list[str]:
    return [name for name in container_names() if name.startswith(f"fleet-run-{run.pk}-")]


def reported(node) -> list[dict]:
    """What the node's simulated agent reports on GPU 0."""
    return LocalRuns(node.hostname).processes_by_gpu(gpu_count=2).get(0, [])


def test_the_commands_output_arrives_in_the_run_log(cast, container_node):
    run = start_in_image(cast, container_node, ["sh", "-c", 'echo "inside run $FLEET_RUN_ID"; pwd'])

    run = wait_for(run, RunStatus.finished(), timeout_s=120)

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    assert lines(run) == [f"inside run {run.pk}", run.environment["workdir"]]
    assert run.environment["env"]["kind"] == "image" and run.environment["env"]["digest"].startswith("sha256:")
    assert containers_of(run) == []


def test_a_long_run_is_seen_as_the_run_on_its_gpu_and_cancel_removes_its_container(cast, container_node):
    run = start_in_image(cast, container_node, ["sh", "-c", "echo holding; exec sleep 600"])
    wait_until(lambda: "holding" in lines(run), 120, "the command's first line")
    assert len(containers_of(run)) == 1

    wait_until(lambda: reported(container_node), 30, "the run's process in the agent's report")
    [process] = reported(container_node)
    assert process["run"] == run.pk and process["name"] == "sleep"
    # The host pid of the command inside the container, as podman sees it.
    inspected = subprocess.run(
        ["podman", "top", containers_of(run)[0], "hpid", "comm"], capture_output=True, text=True, check=True
    ).stdout
    assert f"{process['pid']} " in inspected and "sleep" in inspected

    request_cancel(run, cast["owner"])
    run = wait_for(run, RunStatus.CANCELLED, timeout_s=60)

    assert containers_of(run) == []
    assert wait_until_no_run_processes(run, timeout_s=10) == []


def test_a_stale_container_of_the_same_name_is_removed_before_the_run_starts(cast, container_node):
    # A container a crashed node worker left for this very share (same run id and rank) would block the name.
    with connection.cursor() as cursor:
        sequence = "pg_get_serial_sequence('training_run', 'id')"
        cursor.execute(f"SELECT setval({sequence}, nextval({sequence}) + 1000)")
        next_id = cursor.fetchone()[0] + 1
    stale = f"fleet-run-{next_id}-0"
    subprocess.run(["podman", "run", "-d", "--name", stale, IMAGE, "sleep", "600"], check=True, capture_output=True)

    run = start_in_image(cast, container_node, ["echo", "fresh"])
    assert run.pk == next_id
    run = wait_for(run, RunStatus.finished(), timeout_s=120)

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    assert lines(run) == ["fresh"]
    assert containers_of(run) == []
