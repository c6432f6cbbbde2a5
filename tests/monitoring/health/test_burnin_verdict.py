"""The verdict of a burn-in per GPU: the result check, the speed against the datasheet, a run without a result."""

import pytest
from django.utils import timezone

from inventory.models import GPU, GPUModel, Node
from monitoring.health.burnin_records import record_burnin
from training.choices import RunNodeStatus, RunStatus
from training.models import Run, RunNode

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(gpu_models):
    node = Node.objects.create(hostname="gpu-burn")
    h100 = GPUModel.objects.get(name="H100 SXM")
    for index in range(3):
        GPU.objects.create(node=node, index=index, uuid=f"GPU-burn-{index}", model=h100 if index < 2 else None)
    return node


def finished_burnin(owner, node, devices, status=RunStatus.SUCCEEDED, indexes=(0, 1), error="", exit_code=None):
    now = timezone.now()
    exit_code = 0 if exit_code is None and status == RunStatus.SUCCEEDED else exit_code
    run = Run.objects.create(
        owner=owner, name="burn", workload="burnin", strategy="ddp", status=status, error=error, exit_code=exit_code,
        started_at=now, first_step_at=now, finished_at=now, environment={"size": 4096},
        result={"devices": devices} if devices is not None else {},
    )  # fmt: skip
    run.gpus.set(GPU.objects.filter(node=node, index__in=indexes))
    RunNode.objects.create(run=run, node=node, rank=0, gpu_indexes=list(indexes), status=RunNodeStatus.EXITED)
    return run


def device(rank, gflops=50_000.0, mismatches=0):
    return {"device": f"cuda:{rank}", "iterations": 50, "gflops": gflops, "mismatches": mismatches,
            "worst_error_ratio": 0.01}  # fmt: skip


def by_index(records):
    return {record.gpu.index: record for record in records}


def test_a_gpu_near_its_datasheet_with_a_clean_check_passes(cast, node):
    records = by_index(record_burnin(finished_burnin(cast["admin"], node, [device(0), device(1)])))

    assert records[0].passed and records[1].passed
    assert records[0].datasheet_gflops == 67_000 and records[0].fraction_of_peak == pytest.approx(50 / 67)
    assert records[0].reason == ""


def test_wrong_elements_fail_the_gpu_that_made_them_and_only_it(cast, node):
    run = finished_burnin(
        cast["admin"], node, [device(0), device(1, mismatches=7)], status=RunStatus.FAILED, exit_code=1
    )

    records = by_index(record_burnin(run))

    assert records[0].passed
    assert not records[1].passed and records[1].mismatches == 7 and "7 wrong elements" in records[1].reason


def test_a_gpu_below_the_share_of_its_datasheet_fails_on_speed(cast, node, settings):
    settings.BURNIN_MIN_PERCENT_OF_PEAK = 60
    run = finished_burnin(cast["admin"], node, [device(0, gflops=30_000.0), device(1, gflops=41_000.0)])

    records = by_index(record_burnin(run))

    assert not records[0].passed and "45% of the datasheet's 67000 (at least 60 % needed)" in records[0].reason
    assert records[1].passed  # 61 %


def test_an_unknown_model_is_not_judged_on_speed(cast, node):
    run = finished_burnin(cast["admin"], node, [device(0, gflops=1.0)], indexes=(2,))

    (record,) = record_burnin(run)

    assert record.passed and record.datasheet_gflops is None and "no datasheet figure" in record.reason


def test_a_burn_in_that_crashed_without_a_result_fails_every_gpu(cast, node):
    run = finished_burnin(
        cast["admin"], node, None, status=RunStatus.FAILED, error="exited with code -9\nKilled", exit_code=-9
    )

    records = record_burnin(run)

    assert [r.passed for r in records] == [False, False]
    assert records[0].reason == "The burn-in ended without a result: exited with code -9"


def test_another_workload_leaves_no_record(cast, node):
    training = finished_burnin(cast["admin"], node, [device(0)])
    Run.objects.filter(pk=training.pk).update(workload="digits_cnn")
    training.refresh_from_db()

    assert record_burnin(training) == []


def test_recording_twice_keeps_one_record_per_gpu(cast, node):
    run = finished_burnin(cast["admin"], node, [device(0), device(1)])

    record_burnin(run)
    record_burnin(run)

    assert run.burnins.count() == 2
