"""DDP and FSDP across two nodes: one task per node worker, one c10d rendezvous opened by node 0."""

import pytest

from tests.support.node_workers import NodeWorker, run_processes, unique_hostname
from tests.support.processes import wait_for_other_sessions_to_end
from tests.training.conftest import add_node, end_every_run, gpus_of, log_of, start_run, wait_for
from training.choices import RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def two_node_workers(gpu_models, tmp_path):
    workers = [NodeWorker(unique_hostname(name), tmp_path / f"{name}.log") for name in ("node-a", "node-b")]
    yield workers
    end_every_run()
    for worker in workers:
        worker.stop()
    wait_for_other_sessions_to_end()


@pytest.mark.parametrize("strategy, epochs", [("ddp", 8), ("fsdp", 12)])
def test_torchrun_across_two_nodes_trains_digits_to_95_percent(cast, two_node_workers, strategy, epochs):
    nodes = [add_node(worker.hostname, gpus=1) for worker in two_node_workers]
    gpus = [gpu for node in nodes for gpu in gpus_of(node)]

    run = start_run(cast["owner"], gpus, strategy=strategy, processes=1, epochs=epochs)
    run = wait_for(run, RunStatus.finished(), timeout_s=240)

    assert run.status == RunStatus.SUCCEEDED, (run.error, log_of(run))
    assert run.result["accuracy"] >= 0.95
    assert run.environment["world_size"] == 2 and run.environment["strategy"] == strategy
    host, port = run.rendezvous.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    parts = list(run.nodes.order_by("rank").values_list("node__hostname", "status", "exit_code"))
    assert parts == [(nodes[0].hostname, "exited", 0), (nodes[1].hostname, "exited", 0)]
    for node, worker in zip(nodes, two_node_workers, strict=True):
        assert f"run {run.pk}: started" in worker.log_text() and node.hostname == worker.hostname
    assert not run_processes(run)
