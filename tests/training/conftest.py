"""Fixtures for run tests: fleet rows, launching through the real launch path, waiting on runs."""

import time

import pytest

from inventory.models import GPU, GPUModel, Node
from tests.support.node_workers import running_node_worker, unique_hostname, wait_until_no_run_processes
from training.cancel import CancelRefused, request_cancel
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run

# The digits CNN in configurations that reach 95 % held-out accuracy in seconds on two cores.
DIGITS_FAST = {"epochs": 4, "batch_size": 32, "lr": 0.003, "optimizer": "adam", "seed": 0}
DIGITS_LONG = {"epochs": 500, "batch_size": 32, "lr": 0.003, "optimizer": "adam", "seed": 0}


def add_node(hostname: str, gpus: int = 2, cpu_count: int = 2, model: str = "T4") -> Node:
    node = Node.objects.create(hostname=hostname, cpu_count=cpu_count)
    gpu_model = GPUModel.objects.filter(name=model).first()
    for index in range(gpus):
        GPU.objects.create(node=node, index=index, uuid=f"GPU-{hostname}-{index}", model=gpu_model)
    return node


def gpus_of(node: Node, count: int | None = None) -> list[GPU]:
    gpus = list(node.gpus.select_related("node", "model").order_by("index"))
    return gpus if count is None else gpus[:count]


def start_run(
    user, gpus, strategy="single", workload="digits_cnn", node=None, processes=None, script="", **hyper
) -> Run:
    """Launch through the same checks and path as the form and the API; fails the test on a refusal."""
    request = LaunchRequest(
        user=user,
        workload=workload,
        strategy=strategy,
        gpus=list(gpus),
        node=node,
        processes=processes,
        script=script,
        hyperparameters={**DIGITS_FAST, **hyper},
    )
    plan, errors = check_launch(request)
    assert not errors, errors
    return launch(plan)


def wait_for(run: Run, statuses, timeout_s: float = 180.0) -> Run:
    statuses = {statuses} if isinstance(statuses, str) else set(statuses)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in statuses:
            return run
        if run.is_finished:
            break
        time.sleep(0.2)
    raise AssertionError(f"run {run.pk} is {run.status}, not {statuses}: {run.error}\n{log_of(run)}")


def wait_until(condition, timeout_s: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout_s} s")


def log_of(run: Run) -> str:
    return "\n".join(run.logs.order_by("id").values_list("line", flat=True))[-3000:]


def end_every_run(timeout_s: float = 60.0) -> None:
    """Leave nothing running for the next test: cancel what is unfinished and wait for its processes."""
    for run in Run.objects.filter(status__in=RunStatus.unfinished()).select_related("owner"):
        try:
            request_cancel(run, run.owner)
        except CancelRefused:
            pass
    for run in Run.objects.all():
        if not run.is_finished:
            wait_for(run, RunStatus.finished(), timeout_s)
        assert not wait_until_no_run_processes(run, timeout_s)


@pytest.fixture(scope="module")
def node_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """One real node worker for the whole module (starting one costs seconds on two cores)."""
    with running_node_worker("node-a", django_db_blocker, tmp_path_factory) as worker:
        yield worker


@pytest.fixture
def worker_node(node_worker, gpu_models):
    """The worker's node with two (CPU-backed) GPUs; every run is ended after the test."""
    node = add_node(node_worker.hostname)
    yield node
    end_every_run()


def queued_messages(hostname: str) -> int:
    """Messages waiting in the broker for a node's queue."""
    import redis
    from django.conf import settings

    from fleet.celery import node_queue

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        return client.llen(node_queue(hostname))
    finally:
        client.close()


@pytest.fixture
def quiet_node(db, gpu_models):
    """A node no worker consumes: launches stay queued, and the broker shows what was sent."""
    node = add_node(unique_hostname("gpu-idle"), gpus=2, cpu_count=2)
    yield node
    import redis
    from django.conf import settings

    from fleet.celery import node_queue

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(node_queue(node.hostname))
    client.close()
