"""The demo starts one node worker for every demo node, and multi-node runs meet on loopback."""

from fleet.celery import node_queue
from fleet.demo.processes import background_processes, demo_environment


def test_one_node_worker_consumes_every_demo_node_queue():
    processes = dict(background_processes(8000, {"gpu-a": "t1", "gpu-b": "t2"}))
    argv = processes["node-worker"]
    queues = argv[argv.index("-Q") + 1].split(",")
    assert queues == [node_queue("gpu-a"), node_queue("gpu-b")]


def test_demo_runs_meet_at_a_loopback_rendezvous_unless_told_otherwise():
    assert demo_environment({})["RUN_RENDEZVOUS_HOST"] == "127.0.0.1"
    assert demo_environment({"RUN_RENDEZVOUS_HOST": "10.0.0.5"})["RUN_RENDEZVOUS_HOST"] == "10.0.0.5"
