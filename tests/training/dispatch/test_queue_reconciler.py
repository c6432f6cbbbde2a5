"""No run stuck in the queue: a lost message is sent again, a run no worker takes fails with a reason,
the run page says what a run waits for, and a run is never started twice."""

from datetime import timedelta

import pytest
import redis
from celery import Celery, current_app
from django.conf import settings as django_settings
from django.utils import timezone

from fleet.celery import node_queue
from fleet.embedded import EmbeddedRedis
from tests.support.node_workers import FAST_RUN_SETTINGS, NodeWorker, unique_hostname
from tests.training.conftest import add_node, end_every_run, gpus_of, start_run, wait_until
from training.choices import RunStatus
from training.dispatch.reconcile import reconcile_queued_runs
from training.dispatch.send import send_share
from training.dispatch.waiting import waiting_for
from training.models import Run, RunNode, WorkerPresence

pytestmark = pytest.mark.django_db(transaction=True)


def purge(hostname: str) -> None:
    """Leave no message behind for a node no worker will ever consume."""
    client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    try:
        client.delete(node_queue(hostname))
    finally:
        client.close()


def age(run: Run, seconds: float) -> None:
    RunNode.objects.filter(run=run).update(sent_at=timezone.now() - timedelta(seconds=seconds))


def starts_in_log(worker: NodeWorker, run: Run) -> int:
    return worker.log_path.read_text(errors="replace").count(f"run {run.pk}: started ")


def test_a_run_whose_node_has_no_worker_fails_with_a_reason(cast, gpu_models, settings):
    settings.RUN_QUEUE_TIMEOUT_S = 60
    node = add_node(unique_hostname("gpu-a100"))
    run = start_run(cast["owner"], gpus_of(node, 1))
    assert waiting_for(run) == f"waiting for the node worker of {node.hostname}, never seen"
    WorkerPresence.objects.create(node=node, worker="w", seen_at=timezone.now() - timedelta(minutes=4))
    assert waiting_for(run) == f"waiting for the node worker of {node.hostname}, last seen 4 min ago"

    assert reconcile_queued_runs() == {"resent": [], "failed": []}  # it has not waited long enough
    age(run, 61)
    assert reconcile_queued_runs() == {"resent": [], "failed": [run.pk]}

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert f"No node worker took this run within 1 min: the node worker of {node.hostname}, last seen" in run.error
    assert reconcile_queued_runs() == {"resent": [], "failed": []}  # once
    purge(node.hostname)


@pytest.fixture
def broker(tmp_path):
    """A Redis of this test's own as the Celery broker, which the test may stop and start: the session's
    Redis also carries the channel layer and the cache of every other test. The test's process sends
    through it (a Celery app made current for the test) and so does the node worker it starts."""
    server = EmbeddedRedis(tmp_path / "broker")
    server.start()
    previous = current_app._get_current_object()
    sender = Celery("broker-restart", broker=server.url, set_as_current=False)
    sender.set_current()
    try:
        yield server
    finally:
        previous.set_current()
        sender.close()
        server.stop()


def queued_messages(server: EmbeddedRedis, hostname: str) -> int:
    client = redis.Redis.from_url(server.url)
    try:
        return client.llen(node_queue(hostname))
    finally:
        client.close()


def test_after_a_broker_restart_the_queued_runs_are_sent_again_and_each_starts_once(
    broker, cast, gpu_models, settings, tmp_path
):
    settings.RUN_QUEUE_TIMEOUT_S = 1.0
    hostname = unique_hostname("gpu-reconcile")
    node = add_node(hostname, gpus=2)
    runs = [start_run(cast["owner"], [gpu], epochs=500) for gpu in gpus_of(node)]
    assert queued_messages(broker, hostname) == 2

    broker.stop()  # no persistence, as the embedded and a default Redis run: both messages are gone
    broker.start()
    assert queued_messages(broker, hostname) == 0
    assert {run.status for run in Run.objects.filter(pk__in=[run.pk for run in runs])} == {RunStatus.QUEUED}

    run_settings = {**FAST_RUN_SETTINGS, "CELERY_BROKER_URL": broker.url}
    # A slot left for the extra message below.
    worker = NodeWorker(hostname, tmp_path / "worker.log", concurrency=3, run_settings=run_settings)
    try:
        wait_until(lambda: WorkerPresence.objects.filter(node=node, idle_slots__gt=0).exists(), 60, "presence")

        def settled() -> bool:
            reconcile_queued_runs()  # what beat does every RUN_RECONCILE_S
            statuses = {run.pk: Run.objects.get(pk=run.pk).status for run in runs}
            return all(status in (RunStatus.RUNNING, RunStatus.SUCCEEDED) for status in statuses.values())

        wait_until(settled, 120, "every run running")
        for run in runs:
            assert RunNode.objects.get(run=run).sends == 2
        # A message sent once more while the run runs is taken by the worker and does nothing.
        send_share(RunNode.objects.select_related("node").get(run=runs[0]))
        wait_until(lambda: "skipped: the run is no longer waiting" in worker.log_text(), 60, "the extra message")
        assert [starts_in_log(worker, run) for run in runs] == [1, 1]
    finally:
        end_every_run()
        worker.stop()


def test_a_share_waiting_for_busy_gpus_is_not_taken_for_lost(cast, gpu_models, settings):
    settings.RUN_QUEUE_TIMEOUT_S = 60
    node = add_node(unique_hostname("gpu-busy"))
    run = start_run(cast["owner"], gpus_of(node, 1))
    WorkerPresence.objects.create(node=node, worker="w", seen_at=timezone.now(), idle_slots=1)
    age(run, 120)
    RunNode.objects.filter(run=run).update(seen_at=timezone.now())  # its worker retries it: GPUs busy
    assert reconcile_queued_runs() == {"resent": [], "failed": []}
    assert waiting_for(run) == f"waiting for its GPUs on {node.hostname} to be free"
    purge(node.hostname)
