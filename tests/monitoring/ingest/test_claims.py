"""Run claims cost one query per flush whatever the number of samples, and only a placed run is believed."""

from types import SimpleNamespace

import pytest

from monitoring.ingest.claims import check_claims
from tests.support.reservations import fleet_gpus  # noqa: F401 (fixture)
from training.models import Run


def flush_of(gpus, run_id: int, samples_per_gpu: int) -> list[tuple]:
    """(GPURef, Sample)-shaped pairs: every process of every sample claims run_id."""
    return [
        (SimpleNamespace(id=gpu.pk), SimpleNamespace(processes=[{"pid": 1000 + i, "claimed_run": run_id}]))
        for gpu in gpus
        for i in range(samples_per_gpu)
    ]


@pytest.mark.parametrize("samples_per_gpu", [1, 50])
def test_claims_cost_one_query_per_flush_and_only_placements_are_believed(
    cast,
    fleet_gpus,  # noqa: F811
    django_assert_num_queries,
    samples_per_gpu,
):
    run = Run.objects.create(owner=cast["owner"], name="r", workload="digits", strategy="single")
    run.gpus.add(*fleet_gpus[:2])
    flush = flush_of(fleet_gpus[:3], run.pk, samples_per_gpu)
    with django_assert_num_queries(1):
        refused = check_claims(flush)
    processes = [sample.processes[0] for _, sample in flush]
    believed = [p for p in processes if p.get("run") == run.pk]
    assert len(believed) == 2 * samples_per_gpu
    assert len(refused) == samples_per_gpu and {claim.gpu_id for claim in refused} == {fleet_gpus[2].pk}
    assert all(p["unverified_run"] == run.pk for p in processes if "run" not in p)


def test_a_flush_without_claims_asks_the_database_nothing(fleet_gpus, django_assert_num_queries):  # noqa: F811
    flush = [(SimpleNamespace(id=gpu.pk), SimpleNamespace(processes=[{"pid": 7}])) for gpu in fleet_gpus]
    with django_assert_num_queries(0):
        assert check_claims(flush) == []
