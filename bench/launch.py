"""Time from Launch to the first training step, through the real path: web server → PostgreSQL →
Celery (Redis) → node worker → process group → first step.

Baseline, measured in the same run: the same training command started directly by this script
(no web app, no Celery), from Popen to its first step. The difference is what launching from the
fleet adds.

    DATABASE_URL=… REDIS_URL=… SECRET_KEY=… python bench/launch.py [--repeats 5]

It migrates that database, adds a user and a node with two (CPU-backed) GPUs, starts a uvicorn and a
node worker with default run settings, and removes all of it (runs included) at the end.
"""

import argparse
import http.cookiejar
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from accounts.tokens import issue  # noqa: E402
from inventory.models import GPU, GPUModel, Node  # noqa: E402
from tests.support.node_workers import NodeWorker, unique_hostname  # noqa: E402
from tests.support.processes import ServerProcess, process_environment  # noqa: E402
from training.models import Run  # noqa: E402
from training.node.commands import script_args  # noqa: E402
from training.strategies.ddp import torchrun_argv  # noqa: E402
from training.workloads import WORKLOADS, event_lines  # noqa: E402

PASSWORD = "bench-launch-password-7"
HYPER = {"epochs": 1, "batch_size": 32, "lr": 0.003, "optimizer": "adam", "seed": 0}
CASES = [("single", 1), ("ddp", 2)]


def setup_fleet() -> tuple[Node, object]:
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-launch")
    user.set_password(PASSWORD)
    user.save()
    node = Node.objects.create(hostname=unique_hostname("bench"), cpu_count=os.cpu_count())
    model = GPUModel.objects.filter(name="T4").first()
    for index in range(2):
        GPU.objects.create(node=node, index=index, uuid=f"GPU-{node.hostname}-{index}", model=model)
    return node, user


def remove_fleet(node: Node, user) -> None:
    """Leave the database as it was: the benchmark's runs, node, GPUs and user go."""
    Run.objects.filter(owner=user).delete()
    node.gpus.all().delete()
    node.delete()
    user.delete()


class Browser:
    """Logs in and posts the launch form like a browser: cookies and CSRF tokens."""

    def __init__(self, base: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def csrf(self, path: str) -> str:
        body = self.opener.open(self.base + path).read().decode()
        return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', body).group(1)

    def post(self, path: str, fields: list[tuple[str, str]]) -> str:
        token = self.csrf(path)
        data = urllib.parse.urlencode([("csrfmiddlewaretoken", token), *fields]).encode()
        request = urllib.request.Request(self.base + path, data=data, headers={"Referer": self.base + path})
        return self.opener.open(request).geturl()

    def log_in(self, username: str) -> None:
        self.post("/login/", [("username", username), ("password", PASSWORD)])


def launch_by_form(browser: Browser, gpus: list[GPU], strategy: str) -> tuple[int, float]:
    fields = [("workload", "digits_cnn"), ("strategy", strategy), *[(k, str(v)) for k, v in HYPER.items()]]
    fields += [("gpus", str(gpu.pk)) for gpu in gpus]
    started = time.time()
    url = browser.post("/runs/new/", fields)
    return int(re.search(r"/runs/(\d+)/", url).group(1)), started


def launch_by_api(base: str, token: str, gpus: list[GPU], strategy: str) -> tuple[int, float]:
    body = json.dumps(
        {"workload": "digits_cnn", "strategy": strategy, "gpus": [g.uuid for g in gpus], "hyperparameters": HYPER}
    )
    request = urllib.request.Request(
        base + "/api/runs/",
        data=body.encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    started = time.time()
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())["id"], started


def first_step_of(run_id: int, timeout_s: float = 300.0) -> Run:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.is_finished:
            if run.first_step_at is None:
                raise RuntimeError(f"run {run_id} ended {run.status} without a first step: {run.error}")
            return run
        time.sleep(0.1)
    raise RuntimeError(f"run {run_id} did not finish within {timeout_s} s")


def direct_first_step(strategy: str, processes: int) -> float:
    """Seconds from Popen to the first step of the same command, started by hand."""
    module = WORKLOADS["digits_cnn"].module
    args = script_args(HYPER)
    if strategy == "ddp":
        argv = torchrun_argv(module, processes, script_args=args)
    else:
        argv = [sys.executable, "-m", module, *args]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY")}
    started = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    first = None
    for line in proc.stdout:
        event = event_lines.parse_event(line)
        if event and event["event"] == "first_step" and first is None:
            first = event["ts"]
    proc.wait()
    return first - started


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    node, user = setup_fleet()
    token = issue(user, "launch benchmark")[1]
    gpus = list(node.gpus.select_related("node", "model").order_by("index"))
    logs = Path(tempfile.mkdtemp(prefix="bench-launch-"))
    server = ServerProcess(process_environment(), logs / "server.log")
    worker = NodeWorker(node.hostname, logs / "worker.log", run_settings={})
    rows = []
    try:
        browser = Browser(server.url)
        browser.log_in(user.username)
        for strategy, processes in CASES:
            chosen = gpus[:processes]
            measured = {"form": [], "api": [], "queue": [], "direct": []}
            for _ in range(args.repeats):
                for how in ("form", "api"):
                    if how == "form":
                        run_id, started = launch_by_form(browser, chosen, strategy)
                    else:
                        run_id, started = launch_by_api(server.url, token, chosen, strategy)
                    run = first_step_of(run_id)
                    measured[how].append(run.first_step_at.timestamp() - started)
                    measured["queue"].append(run.started_at.timestamp() - started)
                measured["direct"].append(direct_first_step(strategy, processes))
            rows.append((strategy, processes, measured))
            print(strategy, {k: [round(v, 2) for v in vs] for k, vs in measured.items()}, flush=True)
    finally:
        worker.stop()
        server.stop()
        remove_fleet(node, user)
    print()
    print(
        "| launch | form POST → first step | API call → first step | launch → node worker started it | "
        "direct Popen → first step (baseline) | ratio (API / baseline) |"
    )
    print("|---|---|---|---|---|---|")
    for strategy, processes, m in rows:
        ratio = statistics.median(m["api"]) / statistics.median(m["direct"])
        print(
            f"| digits_cnn {strategy} × {processes} | {summary(m['form'])} | {summary(m['api'])} | "
            f"{summary(m['queue'])} | {summary(m['direct'])} | {ratio:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
