"""`python -m fleet.demo`: services, migrations, demo data, then the web server, workers and simulated agents.

Ctrl-C stops everything this started and leaves nothing running.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

from fleet import serving
from fleet.demo.nodes import DEMO_NODES
from fleet.embedded import BASE_DIR, Services

VAR = BASE_DIR / "var"
DEMO_DIR = VAR / "demo"
LOG_DIR = VAR / "log"
PYTHON = sys.executable
# The NVML name each demo node's simulated agent reports, so its hello confirms the GPUs the demo seeded.
DEMO_GPU_MODELS = {hostname: nvml_name for hostname, (_, nvml_name, *_) in DEMO_NODES.items()}


def manage(env: dict, *args: str) -> None:
    subprocess.run([PYTHON, "manage.py", *args], env=env, cwd=BASE_DIR, check=True)


def background_processes(port: int, tokens: dict[str, str]) -> list[tuple[str, list[str]]]:
    """Everything besides the web server: workers, beat, one node worker and simulated agents."""
    celery = [PYTHON, "-m", "celery", "-A", "fleet"]
    node_queues = ",".join(f"node.{hostname}" for hostname in tokens)
    processes = [
        ("worker", [*celery, "worker", "-Q", "default", "-c", "2", "-n", "central@%h", "--loglevel", "INFO"]),
        ("beat", [*celery, "beat", "--loglevel", "INFO"]),
        ("node-worker", [*celery, "worker", "-Q", node_queues, "-c", "4", "-n", "nodes@%h", "--loglevel", "INFO"]),
    ]
    for hostname, token in tokens.items():
        agent = [
            PYTHON,
            "-m",
            "monitoring.agent",
            "--server",
            f"ws://127.0.0.1:{port}",
            "--token-file",
            str(token_file(hostname, token)),
            "--hostname",
            hostname,
            "--simulate",
            "8",
        ]
        if hostname in DEMO_GPU_MODELS:
            agent += ["--gpu-model", DEMO_GPU_MODELS[hostname]]
        processes.append((f"agent-{hostname}", agent))
    return processes


def token_file(hostname: str, token: str):
    """The agent's token in a file only its owner reads: the command line is visible to every user (ps)."""
    path = VAR / "demo" / f"agent-{hostname}.token"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(token + "\n")
    return path


class Supervisor:
    """Starts each part in its own process group, logs to var/log/, and stops them all."""

    def __init__(self, env: dict):
        self.env = env
        self.children: list[tuple[str, subprocess.Popen]] = []
        LOG_DIR.mkdir(parents=True, exist_ok=True)

    def start(self, name: str, argv: list[str]) -> None:
        log = open(LOG_DIR / f"{name}.log", "ab")
        child = subprocess.Popen(
            argv, env=self.env, cwd=BASE_DIR, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.children.append((name, child))

    def exited(self) -> list[tuple[str, int]]:
        return [(name, child.returncode) for name, child in self.children if child.poll() is not None]

    def stop(self, grace_s: float = 8.0) -> None:
        for _, child in self.children:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for _, child in self.children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()


def wait_for_login_page(url: str, stopping: list, timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not stopping:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


def demo_environment(env: dict) -> dict:
    env = dict(env)
    env.setdefault("DEBUG", "1")
    env.setdefault("SECRET_KEY", "demo-only-secret-key")
    env.setdefault("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
    # Every demo node is this machine: a multi-node DDP run meets at a rendezvous on loopback.
    env.setdefault("RUN_RENDEZVOUS_HOST", "127.0.0.1")
    # Alerts within the demo's first minutes: carol's forgotten notebook is idle after 2 minutes, not 30.
    env.setdefault("ALERT_IDLE_WINDOW_MIN", "2")
    env.setdefault("ALERT_EVAL_INTERVAL_S", "15")
    env.setdefault("SITE_URL", f"http://127.0.0.1:{env.get('PORT', '8000')}")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def print_ready(url: str, started_at: float) -> None:
    logins = json.loads((DEMO_DIR / "logins.json").read_text())
    print(f"\nGPU Fleet is up at {url}  (ready in {time.monotonic() - started_at:.1f} s)")
    for username, password in logins.items():
        role = "admin" if username == "admin" else "researcher"
        print(f"  {role:<10} {username:<8} password: {password}")
    print(f"Logs: {LOG_DIR}/   Stop with Ctrl-C.\n", flush=True)


def main() -> int:
    started_at = time.monotonic()
    port = int(os.environ.get("PORT", "8000"))
    services = Services()
    supervisor = None
    stopping = []
    # Set explicitly: a shell that starts us in the background would otherwise leave SIGINT ignored.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.append(True))
    try:
        env = demo_environment(services.fill_environment(os.environ))
        manage(env, "migrate", "--noinput", "-v", "0")
        manage(env, "fleet_demo_seed")
        tokens = json.loads((DEMO_DIR / "agent-tokens.json").read_text())
        supervisor = Supervisor(env)
        supervisor.start("web", serving.local_command(port))
        url = f"http://127.0.0.1:{port}/"
        if not wait_for_login_page(url + "login/", stopping):
            if stopping:
                return 0
            print(f"The web server did not answer within 60 s; see {LOG_DIR / 'web.log'}", file=sys.stderr)
            return 1
        for name, argv in background_processes(port, tokens):
            supervisor.start(name, argv)
        print_ready(url, started_at)
        reported = set()
        while not stopping:
            for name, code in supervisor.exited():
                if name not in reported:
                    reported.add(name)
                    print(f"{name} exited with code {code}; see {LOG_DIR / (name + '.log')}", file=sys.stderr)
            time.sleep(0.5)
        return 0
    finally:
        print("Stopping GPU Fleet demo…", flush=True)
        if supervisor:
            supervisor.stop()
        services.stop()
        print("Stopped.")
