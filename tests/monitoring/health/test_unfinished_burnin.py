"""A burn-in that did not run to its end (lost, cancelled, failed before its processes exited) leaves a record
without a verdict: it says why, shows in the GPU's health history, and counts neither as a pass nor as a fail."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from inventory.models import GPU, GPUModel, Node
from monitoring.health.burnin_records import record_burnin
from monitoring.health.models import BurnIn
from monitoring.health.status import last_burnins
from tests.monitoring.health.test_burnin_verdict import device, finished_burnin
from tests.support.health import failed_burnin
from training.cancel import request_cancel
from training.choices import RunNodeStatus, RunStatus
from training.dispatch.lost import mark_lost_runs
from training.dispatch.reconcile import reconcile_queued_runs
from training.models import Run, RunNode

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(gpu_models):
    node = Node.objects.create(hostname="gpu-burn")
    h100 = GPUModel.objects.get(name="H100 SXM")
    for index in range(2):
        GPU.objects.create(node=node, index=index, uuid=f"GPU-burn-{index}", model=h100)
    return node


def burnin_run(owner, node: Node, status: str, heartbeat_age_s: float | None = None, sent_age_s: float = 0.0) -> Run:
    now = timezone.now()
    started = now - timedelta(seconds=30) if status == RunStatus.RUNNING else None
    run = Run.objects.create(
        owner=owner, name="burn", workload="burnin", strategy="ddp", status=status, started_at=started,
        first_step_at=started, environment={"size": 4096},
    )  # fmt: skip
    run.gpus.set(node.gpus.filter(index__in=(0, 1)))
    RunNode.objects.create(
        run=run, node=node, rank=0, gpu_indexes=[0, 1], worker="node@gpu-burn",
        status=RunNodeStatus.RUNNING if status == RunStatus.RUNNING else RunNodeStatus.QUEUED,
        heartbeat_at=None if heartbeat_age_s is None else now - timedelta(seconds=heartbeat_age_s),
        sent_at=now - timedelta(seconds=sent_age_s), sends=1,
    )  # fmt: skip
    return run


def test_a_lost_burn_in_records_each_gpu_without_a_verdict_and_with_the_reason(cast, node, settings):
    settings.RUN_HEARTBEAT_S, settings.RUN_MISSED_HEARTBEATS = 1.0, 3
    run = burnin_run(cast["admin"], node, RunStatus.RUNNING, heartbeat_age_s=60)

    assert mark_lost_runs() == [run.pk]

    records = list(BurnIn.objects.filter(run=run).order_by("gpu__index"))
    assert [record.gpu.index for record in records] == [0, 1]
    for record in records:
        assert record.passed is None and record.verdict == "did not finish"
        assert record.reason.startswith("The burn-in did not finish (lost): The node worker on gpu-burn")
        assert record.finished_at == Run.objects.get(pk=run.pk).finished_at


def test_a_burn_in_cancelled_in_the_queue_says_who_cancelled_it(cast, node):
    run = burnin_run(cast["admin"], node, RunStatus.QUEUED)

    request_cancel(run, cast["admin"])

    reasons = set(BurnIn.objects.filter(run=run).values_list("passed", "reason"))
    assert reasons == {(None, "The burn-in did not finish (cancelled): Cancelled by root before it started.")}


def test_a_burn_in_no_node_worker_took_did_not_finish_rather_than_fail(cast, node, settings):
    settings.RUN_QUEUE_TIMEOUT_S = 60
    run = burnin_run(cast["admin"], node, RunStatus.QUEUED, sent_age_s=600)

    assert reconcile_queued_runs()["failed"] == [run.pk]

    (reason,) = set(BurnIn.objects.filter(run=run).values_list("reason", flat=True))
    assert BurnIn.objects.filter(run=run, passed=None).count() == 2
    assert reason.startswith("The burn-in did not finish (failed): No node worker took this run")


def test_a_burn_in_that_did_not_finish_neither_clears_nor_sets_the_gpus_mark(cast, node):
    gpu = node.gpus.get(index=0)
    failed_burnin(gpu, timezone.now() - timedelta(hours=1))
    cancelled = finished_burnin(cast["admin"], node, [device(0)], status=RunStatus.CANCELLED, indexes=(0,))

    (record,) = record_burnin(cancelled)

    assert record.passed is None and record.gflops is None
    assert last_burnins([gpu.uuid])[gpu.uuid].passed is False  # the earlier failure still marks the GPU
    passing = finished_burnin(cast["admin"], node, [device(0)], indexes=(0,))
    record_burnin(passing)
    record_burnin(finished_burnin(cast["admin"], node, [device(0)], status=RunStatus.LOST, indexes=(0,)))
    assert last_burnins([gpu.uuid])[gpu.uuid].run_id == passing.pk


def test_the_gpu_page_and_api_show_it_in_the_history_and_keep_the_last_verdict(cast, node, client):
    gpu = node.gpus.get(index=0)
    passing = finished_burnin(cast["admin"], node, [device(0)], indexes=(0,))
    record_burnin(passing)
    run = burnin_run(cast["admin"], node, RunStatus.QUEUED)
    request_cancel(run, cast["admin"])
    client.force_login(cast["owner"])

    html = client.get(reverse("fleet:gpu", args=[gpu.uuid])).content.decode()
    health = client.get(f"/api/gpus/{gpu.uuid}/health/").json()
    burnins = client.get(f"/api/gpus/{gpu.uuid}/burnins/").json()["results"]

    assert '<span class="badge cancelled">burn-in did not finish</span>' in html
    assert "(cancelled): Cancelled by root before it started." in html
    assert html.count('<span class="badge succeeded">burn-in passed</span>') == 1
    assert "No health problem known." in html
    assert health["problems"] == [] and health["last_burnin"]["run"] == passing.pk
    assert [(b["run"], b["passed"]) for b in burnins] == [(run.pk, None), (passing.pk, True)]
