"""Time from launch to the first output line of a researcher's own command, by environment.

The same tiny command (`python -c "print('hello')"`) in the fleet's environment (the baseline) and in a
venv this script makes; and `echo hello` bare (fleet environment) against the same in a container image
(podman, busybox-static imported here). Each round launches every case once, alternated, through the real
path: the launch checks, the run row, a Celery task, a real node worker, the process group, the stream.
Measured: from the call to ``launch()`` to the ``ts`` of the run's first stored log line.

    DATABASE_URL=… REDIS_URL=… SECRET_KEY=… python bench/command_launch.py [--rounds 5]

It migrates that database, adds a user and a node with two (CPU-backed) GPUs, starts a node worker
(RUN_FLUSH_S 0.1, so the stream's batching hides little), and removes all of it at the end.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
WORK = Path(tempfile.mkdtemp(prefix="bench-command-"))
CONTAINER_SETTINGS = {
    "RUN_CONTAINER_RUNTIME": "podman",
    "RUN_CONTAINER_IMAGES": "localhost/fleet-test/busybox",
    "RUN_CONTAINER_GPUS": "false",
    "RUN_ENV_DIRS": str(WORK / "envs"),
    "RUN_FLUSH_S": "0.1",
}
os.environ.update(CONTAINER_SETTINGS)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from inventory.models import GPU, GPUModel, Node  # noqa: E402
from tests.support.containers import IMAGE, import_image, make_podman, remove_everything  # noqa: E402
from tests.support.node_workers import NodeWorker, unique_hostname  # noqa: E402
from training.launching.launch import LaunchRequest, check_launch, launch  # noqa: E402
from training.models import Run, RunLog  # noqa: E402

PYTHON = ["python", "-c", "print('hello')"]
ECHO = ["echo", "hello"]


def cases(venv: Path) -> dict[str, dict]:
    return {
        "fleet": {"command": PYTHON},
        "venv": {"command": PYTHON, "env_kind": "venv", "env_ref": str(venv)},
        "bare": {"command": ECHO},
        "image": {"command": ECHO, "env_kind": "image", "env_ref": IMAGE},
    }


def setup_fleet() -> tuple[Node, object]:
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-command")
    node = Node.objects.create(hostname=unique_hostname("bench-cmd"), cpu_count=os.cpu_count())
    model = GPUModel.objects.filter(name="T4").first()
    for index in range(2):
        GPU.objects.create(node=node, index=index, uuid=f"GPU-{node.hostname}-{index}", model=model)
    return node, user


def remove_fleet(node: Node, user) -> None:
    Run.objects.filter(owner=user).delete()
    node.gpus.all().delete()
    node.delete()
    user.delete()


def first_line_after(user, gpu: GPU, fields: dict, timeout_s: float = 120.0) -> float:
    """Seconds from launch to the first stored log line's time; waits for the run to end."""
    plan, errors = check_launch(LaunchRequest(user=user, workload="command", gpus=[gpu], **fields))
    if errors:
        raise RuntimeError(errors)
    started = time.time()
    run = launch(plan)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.is_finished:
            first = RunLog.objects.filter(run=run).order_by("id").first()
            if first is None or run.status != "succeeded":
                raise RuntimeError(f"run {run.pk} ended {run.status} with no output: {run.error}")
            return first.ts.timestamp() - started
        time.sleep(0.05)
    raise RuntimeError(f"run {run.pk} did not end within {timeout_s} s")


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    podman = make_podman(WORK)
    os.environ.update(podman.env)
    import_image(WORK)
    venv = WORK / "envs" / "plain"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    node, user = setup_fleet()
    worker = NodeWorker(node.hostname, WORK / "worker.log", run_settings={**CONTAINER_SETTINGS, **podman.env})
    gpu = node.gpus.order_by("index").first()
    measured = {name: [] for name in cases(venv)}
    try:
        first_line_after(user, gpu, cases(venv)["fleet"])  # warm the worker's imports and connections
        for _ in range(args.rounds):
            for name, fields in cases(venv).items():
                measured[name].append(first_line_after(user, gpu, fields))
            print({name: round(values[-1], 2) for name, values in measured.items()}, flush=True)
    finally:
        worker.stop()
        remove_fleet(node, user)
        remove_everything()
    med = {name: statistics.median(values) for name, values in measured.items()}
    print()
    print("| command | launch → first line, median (min–max) | ratio |")
    print("|---|---|---|")
    print(f"| `python -c` in the fleet's environment | {median(measured['fleet'])} | 1 (baseline) |")
    print(f"| the same in a venv | {median(measured['venv'])} | {med['venv'] / med['fleet']:.2f}× fleet |")
    print(f"| `echo` bare | {median(measured['bare'])} | 1 (baseline) |")
    print(f"| the same in a podman image | {median(measured['image'])} | {med['image'] / med['bare']:.2f}× bare |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
