"""A node worker that dies leaves its run lost after missed heartbeats, its GPUs free, and no process behind."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.node_workers import NodeWorker, run_processes, unique_hostname, wait_until_no_run_processes
from tests.support.processes import wait_for_other_sessions_to_end
from tests.training.conftest import DIGITS_LONG, add_node, end_every_run, gpus_of, start_run, wait_until
from training.choices import RunNodeStatus, RunStatus
from training.dispatch.lost import mark_lost_runs
from training.models import Run, RunNode
from training.node.worker import busy_gpu_ids

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fast_heartbeats(settings):
    settings.RUN_HEARTBEAT_S = 0.5  # as the test workers send them
    settings.RUN_MISSED_HEARTBEATS = 3


@pytest.fixture
def doomed_worker(gpu_models, tmp_path):
    hostname = unique_hostname("node-doomed")
    worker = NodeWorker(hostname, tmp_path / "worker.log")
    yield worker
    worker.stop()
    end_every_run()
    wait_for_other_sessions_to_end()


def test_a_killed_node_worker_leaves_the_run_lost_its_gpus_free_and_no_orphan(cast, doomed_worker, fast_heartbeats):
    node = add_node(doomed_worker.hostname)
    gpus = gpus_of(node, 2)
    run = start_run(cast["owner"], gpus, strategy="ddp", **DIGITS_LONG)
    wait_until(lambda: run.metrics.exists(), what="first progress")
    assert len(run_processes(run)) >= 3

    doomed_worker.kill()

    assert not wait_until_no_run_processes(run, timeout_s=15)
    time.sleep(3 * 0.5 + 0.5)
    assert mark_lost_runs() == [run.pk]
    run.refresh_from_db()
    assert run.status == RunStatus.LOST
    assert doomed_worker.hostname in run.error and "no heartbeat" in run.error
    assert run.nodes.get().status == RunNodeStatus.LOST
    newcomer = Run.objects.create(owner=cast["teammate"], name="next", workload="digits_cnn", strategy="ddp")
    assert busy_gpu_ids([gpu.pk for gpu in gpus], newcomer) == set()


def test_a_run_with_fresh_heartbeats_is_not_lost(cast, gpu_models, fast_heartbeats):
    run = running_run(cast, heartbeat_age_s=0.5)

    assert mark_lost_runs() == []
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING


def test_a_run_silent_for_three_heartbeats_is_lost_once(cast, gpu_models, fast_heartbeats):
    run = running_run(cast, heartbeat_age_s=2.0)

    assert mark_lost_runs() == [run.pk]
    assert mark_lost_runs() == []
    run.refresh_from_db()
    assert run.status == RunStatus.LOST and run.finished_at is not None


def running_run(cast, heartbeat_age_s: float) -> Run:
    node = add_node("gpu-quiet")
    run = Run.objects.create(owner=cast["owner"], name="quiet", workload="digits_cnn", strategy="single")
    run.gpus.set(gpus_of(node, 1))
    run.start()
    run.mark_running()
    beat = timezone.now() - timedelta(seconds=heartbeat_age_s)
    RunNode.objects.create(run=run, node=node, rank=0, gpu_indexes=[0], status=RunNodeStatus.RUNNING, heartbeat_at=beat)
    return run
