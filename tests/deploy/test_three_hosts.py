"""The web host and two GPU nodes as separate hosts on a network, installed as docs/install.md says.

Network namespaces stand in for the machines (tests/deploy/netns.py); everything else is real: the role
installs, PostgreSQL and Redis on the web host's address, uvicorn, Celery workers and beat, agents with
simulated GPUs, torchrun across the two nodes, and a link pulled out of one node.
"""

import time

import psutil
import psycopg
import pytest
import redis

from tests.deploy.cluster import AGENT_INTERVAL_S, Cluster, gpu_uuids, online_with_gpus, three_hosts, wait_until
from tests.deploy.netns import NamespacesUnavailable, namespace_pids

pytestmark = pytest.mark.timeout(900)

# The digits CNN in a configuration that reaches 95 % held-out accuracy as DDP over two ranks.
DIGITS = {"epochs": 8, "batch_size": 32, "lr": 0.003, "optimizer": "adam", "seed": 0}
CUT_S = 12.0
# A researcher's own DDP script: gloo, both ranks meet, each says where it ran in one write.
OWN_DDP_SCRIPT = """\
import os
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
assert os.environ["WORLD_SIZE"] == "2" and dist.get_world_size() == 2
total = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(total)
said = f"rank {dist.get_rank()} of {os.environ['WORLD_SIZE']} on {os.environ['FLEET_NODE']}: sum {total.item():g}\\n"
os.write(1, said.encode())
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def hosts(roles):
    try:
        with three_hosts(roles) as cluster:
            yield cluster
    except NamespacesUnavailable as error:
        pytest.fail(f"cannot make network namespaces for the three-host test: {error}", pytrace=False)


def test_both_gpu_nodes_report_their_gpus_through_the_web_hosts_address(hosts):
    nodes = wait_until(lambda: online_with_gpus(hosts), 60, "both nodes online with their GPUs")

    for key, hostname in hosts.hostnames.items():
        assert [gpu["name"] for gpu in nodes[hostname]["gpus"]] == ["NVIDIA L40S", "NVIDIA L40S"]
        assert "connected to ws://" + hosts.network.address in hosts.agent(key).text()
    broker = redis.Redis.from_url(hosts.redis.url)
    try:
        clients = {client["addr"].rsplit(":", 1)[0] for client in broker.client_list()}
    finally:
        broker.close()
    node_addresses = {node.address for node in hosts.network.nodes.values()}
    assert node_addresses <= clients, f"the node workers' broker connections come from {clients}"


def test_a_ddp_run_across_the_two_hosts_reaches_its_accuracy(hosts):
    wait_until(lambda: online_with_gpus(hosts), 60, "both nodes online with their GPUs")
    gpus = [gpu_uuids(hosts, "a")[0], gpu_uuids(hosts, "b")[0]]

    launched = hosts.api.launch(workload="digits_cnn", strategy="ddp", gpus=gpus, processes=1, hyperparameters=DIGITS)
    run = hosts.api.wait_run(launched["id"], {"succeeded", "failed", "lost", "cancelled"}, timeout_s=300)

    assert run["status"] == "succeeded", run["error"]
    assert run["result"]["accuracy"] >= 0.95
    assert run["environment"]["world_size"] == 2
    node_a = hosts.node("a")
    assert run["rendezvous"].rsplit(":", 1)[0] == node_a.address
    parts = sorted((part["rank"], part["hostname"], part["status"], part["exit_code"]) for part in run["nodes"])
    assert parts == [(0, hosts.hostnames["a"], "exited", 0), (1, hosts.hostnames["b"], "exited", 0)]
    for key in ("a", "b"):
        assert f"run {run['id']}: started" in hosts.node_worker(key).text()


def test_my_own_ddp_script_spans_the_two_hosts_through_the_fleets_torchrun(hosts, tmp_path):
    wait_until(lambda: online_with_gpus(hosts), 60, "both nodes online with their GPUs")
    (tmp_path / "ddp.py").write_text(OWN_DDP_SCRIPT)
    gpus = [gpu_uuids(hosts, "a")[0], gpu_uuids(hosts, "b")[0]]

    launched = hosts.api.launch(
        workload="command", strategy="ddp", gpus=gpus, processes=1, command=["python", "ddp.py"], workdir=str(tmp_path)
    )
    run = hosts.api.wait_run(launched["id"], {"succeeded", "failed", "lost", "cancelled"}, timeout_s=180)

    assert run["status"] == "succeeded", run["error"]
    lines = [entry["line"] for entry in hosts.api.get(f"/api/runs/{run['id']}/logs/")]
    said = sorted(line.split("]:")[-1].strip() for line in lines if ": sum " in line)
    a, b = hosts.hostnames["a"], hosts.hostnames["b"]
    assert said == [f"rank 0 of 2 on {a}: sum 3", f"rank 1 of 2 on {b}: sum 3"], lines
    assert run["rendezvous"].rsplit(":", 1)[0] == hosts.node("a").address
    assert run["environment"]["command"][1:3] == ["-m", "torch.distributed.run"]


def stored_samples(cluster: Cluster, key: str) -> dict[str, tuple[int, int, int]]:
    """GPU UUID → (samples stored, distinct timestamps, highest frame seq stored), read in one snapshot."""
    query = """
        SELECT g.uuid, count(s.*), count(DISTINCT s.ts), max(a.last_seq)
        FROM fleet_node n
        JOIN fleet_gpu g ON g.node_id = n.id
        JOIN monitoring_agentsession a ON a.node_id = n.id
        LEFT JOIN monitoring_gpusample s ON s.gpu_id = g.id
        WHERE n.hostname = %s
        GROUP BY g.uuid
    """
    with psycopg.connect(cluster.postgres.url) as db:
        return {row[0]: tuple(row[1:]) for row in db.execute(query, [cluster.hostnames[key]])}


def samples_between(cluster: Cluster, key: str, start: float, end: float) -> int:
    query = """
        SELECT count(*) FROM monitoring_gpusample s
        JOIN fleet_gpu g ON g.id = s.gpu_id JOIN fleet_node n ON n.id = g.node_id
        WHERE n.hostname = %s AND s.ts > to_timestamp(%s) AND s.ts < to_timestamp(%s)
    """
    with psycopg.connect(cluster.postgres.url) as db:
        return db.execute(query, [cluster.hostnames[key], start, end]).fetchone()[0]


def run_on_one_gpu(cluster: Cluster, gpu: str) -> dict:
    launched = cluster.api.launch(workload="digits_cnn", gpus=[gpu], hyperparameters={**DIGITS, "epochs": 1})
    return cluster.api.wait_run(launched["id"], {"succeeded", "failed", "lost", "cancelled"}, timeout_s=180)


def test_a_cut_link_loses_the_nodes_run_frees_its_gpus_and_loses_no_telemetry(hosts):
    wait_until(lambda: online_with_gpus(hosts), 60, "both nodes online with their GPUs")
    gpu_a, gpu_b = gpu_uuids(hosts, "a")[1], gpu_uuids(hosts, "b")[1]
    long_run = hosts.api.launch(
        workload="digits_cnn",
        strategy="ddp",
        gpus=[gpu_a, gpu_b],
        processes=1,
        hyperparameters={**DIGITS, "epochs": 500},
    )
    wait_until(lambda: (hosts.api.run(long_run["id"])["progress"]["step"] or 0) > 0, 180, "the long run's first steps")

    cut_at = time.time()
    hosts.network.cut("b")
    lost = hosts.api.wait_run(long_run["id"], {"lost"}, timeout_s=60)
    nodes = wait_until(
        lambda: (n := hosts.api.nodes())[hosts.hostnames["b"]]["status"] == "offline" and n, 30, "node b offline"
    )
    freed = run_on_one_gpu(hosts, gpu_a)  # the lost run's GPU on the node still connected
    time.sleep(max(0.0, cut_at + CUT_S - time.time()))
    mended_at = time.time()
    hosts.network.mend("b")

    assert f"The node worker on {hosts.hostnames['b']}" in lost["error"]
    assert {part["hostname"]: part["status"] for part in lost["nodes"]}[hosts.hostnames["b"]] == "lost"
    assert nodes[hosts.hostnames["a"]]["status"] == "online"
    assert freed["status"] == "succeeded", freed["error"]
    reconnected = lambda: replayed(hosts.agent("b").text(), after=cut_at) is not None  # noqa: E731
    wait_until(reconnected, 60, "node b's agent to reconnect")
    replay = replayed(hosts.agent("b").text(), after=cut_at)
    assert replay >= (mended_at - cut_at - 4) / AGENT_INTERVAL_S, hosts.agent("b").tail()
    wait_until(lambda: hosts.api.nodes()[hosts.hostnames["b"]]["status"] == "online", 30, "node b online again")
    # Frames are stored in seq order: one sampled after the link came back means the replay is all stored.
    wait_until(lambda: samples_between(hosts, "b", mended_at + 1, mended_at + 3600), 30, "frames after the replay")
    for uuid, (stored, distinct, last_seq) in stored_samples(hosts, "b").items():
        assert stored == distinct == last_seq, f"{uuid}: {stored} samples, {distinct} timestamps, up to seq {last_seq}"
    during = samples_between(hosts, "b", cut_at + 1, mended_at - 1)
    assert during >= 2 * (mended_at - cut_at - 3) / AGENT_INTERVAL_S, during
    namespace = hosts.node("b").namespace
    wait_until(lambda: not run_processes(namespace, long_run["id"]), 60, "the lost run's processes on node b to end")
    again = run_on_one_gpu(hosts, gpu_b)  # the lost run's GPU on the node that was cut off
    assert again["status"] == "succeeded", again["error"]


def run_processes(namespace: str, run_id: int) -> list[int]:
    """Processes of a run on one host, found by the run id its environment carries."""
    found = []
    for pid in namespace_pids(namespace):
        try:
            if psutil.Process(pid).environ().get("FLEET_RUN_ID") == str(run_id):
                found.append(pid)
        except psutil.Error:
            continue
    return found


def replayed(agent_log: str, after: float) -> int | None:
    """How many buffered frames the agent replayed on its first reconnect after ``after`` (UNIX seconds)."""
    for line in agent_log.splitlines():
        if "replaying" not in line:
            continue
        logged = time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S"))
        if logged >= int(after):
            return int(line.split("replaying ")[1].split()[0])
    return None
