"""Three hosts on one machine, set up the way docs/install.md tells an admin to.

The web host (the root namespace, at the bridge's address) runs PostgreSQL, Redis, the web server,
the central worker and beat from the web role's install; each GPU node (a namespace of its own) runs
an agent from the agent role's install (simulated GPUs) and a node worker from the node role's
install. Every process talks to the web host's address, never to 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tests.deploy.netns import Network, Node, remove_stale
from tests.deploy.roles import BASE_DIR, Installed, RoleInstalls
from tests.deploy.services import NetworkPostgres, network_redis

CLUSTERS_DIR = BASE_DIR / "var" / "three-hosts"
ADMIN, ADMIN_PASSWORD = "admin", "three-hosts-admin-9"
AGENT_INTERVAL_S = 0.5
# Short enough that a lost run shows in seconds, long enough that two busy cores never fake one.
RUN_SETTINGS = {
    "RUN_HEARTBEAT_S": "1",
    "RUN_MISSED_HEARTBEATS": "8",
    "RUN_FLUSH_S": "0.3",
    "RUN_CANCEL_GRACE_S": "5",
    "RUN_QUEUE_RETRY_S": "0.5",
    "RUN_RENDEZVOUS_TIMEOUT_S": "120",
}


class Api:
    """The JSON API through the web host's address, with an admin's token."""

    def __init__(self, base: str, token: str):
        self.base = base
        self.token = token

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Token {self.token}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def get(self, path: str) -> dict:
        status, payload = self.request("GET", path)
        assert status == 200, (path, status, payload)
        return payload

    def launch(self, **body) -> dict:
        status, payload = self.request("POST", "/api/runs/", body)
        assert status == 201, payload
        return payload

    def nodes(self) -> dict[str, dict]:
        return {node["hostname"]: node for node in self.get("/api/fleet/")["nodes"]}

    def run(self, run_id: int) -> dict:
        return self.get(f"/api/runs/{run_id}/")

    def wait_run(self, run_id: int, statuses: set[str], timeout_s: float = 240) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            run = self.run(run_id)
            if run["status"] in statuses:
                return run
            if run["finished_at"] and run["status"] not in statuses:
                break
            time.sleep(0.5)
        logs = self.get(f"/api/runs/{run_id}/logs/")
        tail = "\n".join(line["line"] for line in logs[-40:]) if isinstance(logs, list) else logs
        raise AssertionError(f"run {run_id} is {run['status']}, not {statuses}: {run['error']}\n{tail}")


def wait_until(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what} did not happen within {timeout_s:.0f} s")


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def tail(self, chars: int = 3000) -> str:
        return f"--- {self.name} ({self.log}) ---\n{self.text()[-chars:]}"


@dataclass
class Cluster:
    """What the three hosts run, and how to reach them."""

    network: Network
    root: Path
    web: Installed
    node_install: Installed
    agent_install: Installed
    postgres: NetworkPostgres | None = None
    redis: object = None
    processes: list[Process] = field(default_factory=list)
    api: Api | None = None
    web_port: int = 0
    node_tokens: dict[str, str] = field(default_factory=dict)

    @property
    def hostnames(self) -> dict[str, str]:
        """Node key (a, b) → the hostname the fleet knows it by."""
        return {key: f"gpu-{key}-{self.network.tag}" for key in self.network.nodes}

    def env(self, **extra: str) -> dict[str, str]:
        """Every setting a role reads, and nothing of the test session's own environment."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "LANG": "C.UTF-8",
            "DJANGO_SETTINGS_MODULE": "fleet.settings",
            "SECRET_KEY": "three-hosts-secret",
            "DATABASE_URL": self.postgres.url,
            "REDIS_URL": self.redis.url,
            "ALLOWED_HOSTS": self.network.address,
            "STATIC_ROOT": str(self.root / "static"),
            "AGENT_INTERVAL_S": str(AGENT_INTERVAL_S),
            "PYTHONUNBUFFERED": "1",
            **RUN_SETTINGS,
        }
        env.update(extra)
        return env

    # --- processes -------------------------------------------------------------------------------

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> Process:
        log = self.root / "logs" / f"{name}.log"
        log.parent.mkdir(exist_ok=True)
        with open(log, "wb") as out:
            popen = subprocess.Popen(
                argv, env=env, cwd=self.root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    def admin(self, *args: str, env: dict | None = None) -> str:
        """A django-admin command on the web host, as docs/install.md runs them."""
        result = subprocess.run(
            [str(self.web.bin("django-admin")), *args],
            env=env or self.env(),
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if result.returncode != 0:
            raise RuntimeError(f"django-admin {' '.join(args)} failed:\n{result.stderr[-3000:]}")
        return result.stdout

    def wait_ready(self, process: Process, marker: str, timeout_s: float = 120) -> None:
        def ready():
            if process.popen.poll() is not None:
                raise RuntimeError(f"{process.name} exited with {process.popen.returncode}\n{process.tail()}")
            return marker in process.text()

        wait_until(ready, timeout_s, f"{process.name} ready")

    def logs(self) -> str:
        return "\n".join(process.tail() for process in self.processes)

    # --- the hosts -------------------------------------------------------------------------------

    def start_services(self) -> None:
        self.postgres = NetworkPostgres(self.root / "pg", self.network.address, str(self.network.subnet))
        self.postgres.start()
        self.redis = network_redis(self.root / "redis", self.network.address)
        self.redis.start()

    def prepare_database(self) -> None:
        self.admin("migrate", "--noinput")
        env = self.env(DJANGO_SUPERUSER_PASSWORD=ADMIN_PASSWORD)
        self.admin("createsuperuser", "--noinput", "--username", ADMIN, "--email", "admin@example.org", env=env)
        token = self.admin("fleet_create_token", ADMIN, "--name", "deployment test").strip().splitlines()[-1]
        for key, hostname in self.hostnames.items():
            self.node_tokens[key] = self.admin("fleet_add_node", hostname).strip().splitlines()[-1]
        self.web_port = free_port_on(self.network.address)
        self.api = Api(f"http://{self.network.address}:{self.web_port}", token)

    def start_web_host(self) -> None:
        web_bin = self.web.bin
        server = self.start(
            "web",
            [
                *(str(web_bin("python")), "-m", "fleet.serving"),
                *("--host", self.network.address, "--port", str(self.web_port), "--no-access-log"),
                # A server that hears nothing from an agent for 3 s closes its side, as a long cut would.
                *("--ws-ping-interval", "1", "--ws-ping-timeout", "2"),
            ],
            self.env(),
        )
        celery = [str(web_bin("celery")), "-A", "fleet"]
        central = self.start(
            "central-worker",
            [*celery, "worker", "-Q", "default", "-n", f"central-{self.network.tag}@%h", "-c", "2", "-l", "INFO"],
            self.env(),
        )
        beat = self.start("beat", [*celery, "beat", "--loglevel", "INFO"], self.env())
        wait_until(lambda: http_ok(f"{self.api.base}/healthz", server), 90, "the web server")
        self.wait_ready(central, " ready.")
        self.wait_ready(beat, "beat: Starting")

    def start_node(self, key: str, cores: str | None = None) -> None:
        """The node's agent and node worker; ``cores`` ("0", "0-1") confines its runs to those CPU cores."""
        node = self.network.nodes[key]
        hostname = self.hostnames[key]
        env = self.env(RUN_RENDEZVOUS_HOST=node.address, GLOO_SOCKET_IFNAME=node.interface)
        confined = ["taskset", "-c", cores] if cores else []
        self.start(
            f"node-worker-{key}",
            node.argv(
                *confined,
                str(self.node_install.bin("celery")),
                *("-A", "fleet", "worker", "-Q", f"node.{hostname}", "-n", f"node@{hostname}"),
                *("-c", "2", "--without-mingle", "--without-gossip", "--loglevel", "INFO"),
            ),
            env,
        )
        token_file = self.root / f"agent-{key}.token"
        token_file.write_text(self.node_tokens[key] + "\n")
        token_file.chmod(0o600)
        agent_env = {
            "PATH": env["PATH"],
            "HOME": env["HOME"],
            "FLEET_AGENT_SERVER": f"ws://{self.network.address}:{self.web_port}",
        }
        self.start(
            f"agent-{key}",
            node.argv(
                str(self.agent_install.bin("gpu-fleet-agent")),
                *("--token-file", str(token_file), "--hostname", hostname),
                *("--simulate", "2", "--scenario", "idle", "--gpu-model", "NVIDIA L40S"),
            ),
            agent_env,
        )

    def node_worker(self, key: str) -> Process:
        return next(p for p in self.processes if p.name == f"node-worker-{key}")

    def agent(self, key: str) -> Process:
        return next(p for p in self.processes if p.name == f"agent-{key}")

    def node(self, key: str) -> Node:
        return self.network.nodes[key]

    # --- teardown --------------------------------------------------------------------------------

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop_group(process.popen)
        if self.redis is not None:
            self.redis.stop()
        if self.postgres is not None:
            try:
                self.postgres.stop()
            except RuntimeError:
                pass


def http_ok(url: str, server: Process) -> bool:
    if server.popen.poll() is not None:
        raise RuntimeError(f"the web server exited with {server.popen.returncode}\n{server.tail()}")
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.HTTPError):
        return False


def free_port_on(address: str) -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


def stop_group(popen: subprocess.Popen, grace_s: float = 10.0) -> None:
    if popen.poll() is None:
        try:
            os.killpg(popen.pid, signal.SIGTERM)
            popen.wait(timeout=grace_s)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(popen.pid, signal.SIGKILL)  # what the group left behind (Celery's pool, torchrun's ranks)
    except ProcessLookupError:
        pass
    try:
        popen.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def remove_stale_clusters() -> None:
    """What a killed session left: its namespaces and links, its PostgreSQL and Redis, its folder."""
    remove_stale()
    if not CLUSTERS_DIR.exists():
        return
    for folder in CLUSTERS_DIR.iterdir():
        if not folder.name.isdigit() or psutil.pid_exists(int(folder.name)):
            continue
        for proc in psutil.process_iter(["cmdline"]):
            if any(str(folder) in arg for arg in proc.info["cmdline"] or []):
                try:
                    proc.kill()
                except psutil.Error:
                    pass
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def three_hosts(roles: RoleInstalls, nodes: dict[str, str | None] | None = None) -> Iterator[Cluster]:
    """The web host and GPU nodes (a and b unless ``nodes`` names them, each with the CPU cores its runs
    may use or None for all), up and registered; everything it made is gone afterwards.

    Raises NamespacesUnavailable before starting anything when this machine cannot make namespaces.
    """
    nodes = nodes or {"a": None, "b": None}
    remove_stale_clusters()
    network = Network(list(nodes))
    root = CLUSTERS_DIR / network.tag
    root.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(network, root, roles["web"], roles["node"], roles["agent"])
    try:
        network.create()
        cluster.start_services()
        cluster.prepare_database()
        cluster.start_web_host()
        for key, cores in nodes.items():
            cluster.start_node(key, cores)
        for key in network.nodes:
            cluster.wait_ready(cluster.node_worker(key), " ready.")
        yield cluster
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        cluster.stop()
        network.destroy()
        shutil.rmtree(root, ignore_errors=True)


def online_with_gpus(cluster: Cluster, gpus: int = 2) -> dict[str, dict]:
    """Both nodes, once each is online and reporting all its GPUs; empty until then."""
    wanted = set(cluster.hostnames.values())
    ready = {
        name: node
        for name, node in cluster.api.nodes().items()
        if name in wanted
        and node["status"] == "online"
        and len(node["gpus"]) == gpus
        and all(g["ts"] for g in node["gpus"])
    }
    return ready if set(ready) == wanted else {}


def gpu_uuids(cluster: Cluster, key: str) -> list[str]:
    node = cluster.api.nodes()[cluster.hostnames[key]]
    return [gpu["uuid"] for gpu in sorted(node["gpus"], key=lambda gpu: gpu["index"])]
