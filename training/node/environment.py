"""The environment a run's processes get, and the record of where and with what they ran."""

import os
import platform
import socket
from importlib import metadata
from pathlib import Path

from django.conf import settings

from inventory.models import GPU
from training import environments
from training.models import COMMAND, Run, RunNode
from training.node.run_as import Account
from training.run_files import checkpoint_dirs
from training.variables import redact, secret_values
from training.workloads.git import git_commit, git_dirty
from training.workloads.run_env import run_env
from training.workloads.torch_build import built_cuda, cudnn_wheel

# The fleet's own secrets stay with the node worker: a run's processes never see them.
WITHHELD = {
    "DATABASE_URL",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "SECRET_KEY",
    "EMAIL_HOST_PASSWORD",
    "METRICS_TOKEN",
    "DJANGO_SETTINGS_MODULE",
}


def process_env(
    run: Run,
    part: RunNode,
    account: Account | None = None,
    output_dir: Path | None = None,
    checkpoint_dir: Path | None = None,
    strategy_env: dict[str, str] | None = None,
) -> dict[str, str]:
    """The node worker's environment minus its secrets, plus the training processes' settings, devices and identity.

    FLEET_RUN_ID is how the agent tells this run's processes from any other (docs/agent-protocol.md);
    every process the run starts inherits it. Run as ``account``, HOME, USER and LOGNAME are its. A command
    run's variables and its environment kind's (PATH, VIRTUAL_ENV …) come next; the fleet's own always win.
    """
    inherited = {key: value for key, value in os.environ.items() if key not in WITHHELD}
    command = run.workload == COMMAND
    if command:
        inherited.pop("PYTHONPATH", None)  # the fleet's code is not the command's
        inherited.update(run.variables)
        inherited.update(environments.get(run.env_kind).variables(run.env_ref, inherited))
    env = run_env(inherited)
    if account is not None:
        env.update(account.env())
    if output_dir is not None:
        env["FLEET_OUTPUT_DIR"] = str(output_dir)
    if checkpoint_dir is not None:
        env.update(checkpoint_env(run, checkpoint_dir))
    if not command:
        base = str(settings.BASE_DIR)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [base, env.get("PYTHONPATH", "")]))
    env.update(
        # NVML numbers GPUs by PCI bus; CUDA does the same only when told to.
        CUDA_DEVICE_ORDER="PCI_BUS_ID",
        CUDA_VISIBLE_DEVICES=",".join(str(index) for index in part.gpu_indexes),
        PYTHONUNBUFFERED="1",
        FLEET_RUN_ID=str(run.pk),
        FLEET_STRATEGY=run.strategy,
        FLEET_NODE=part.node.hostname,
        FLEET_NODE_RANK=str(part.rank),
    )
    env.update(strategy_env or {})
    return env


def checkpoint_env(run: Run, checkpoint_dir: Path) -> dict[str, str]:
    """Where to save checkpoints, when, what to continue from, and how a stop is announced (docs/workloads.md)."""
    env = {
        "FLEET_CHECKPOINT_DIR": str(checkpoint_dir),
        "FLEET_CHECKPOINT_EVERY_STEPS": str(settings.RUN_CHECKPOINT_EVERY_STEPS),
        "FLEET_CHECKPOINT_EVERY_S": f"{settings.RUN_CHECKPOINT_EVERY_S:g}",
        "FLEET_STOP_SIGNAL": "SIGTERM",
        "FLEET_STOP_GRACE_S": f"{settings.RUN_CANCEL_GRACE_S:g}",
    }
    if run.resumed_from_id is not None:
        env["FLEET_RESUME_DIR"] = env["FLEET_RESUME_FROM"] = str(checkpoint_dirs.run_dir(run.resumed_from))
    return env


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def installed_packages() -> dict[str, str]:
    """Every distribution the run's interpreter sees (the node worker starts runs with its own), by name."""
    found = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            found[name.lower()] = dist.version
    return dict(sorted(found.items()))


def gpu_models(run: Run) -> str | None:
    """The run's GPUs by model, every node's: "2 × NVIDIA H100 80GB HBM3"; None for a CPU-only run."""
    counts: dict[str, int] = {}
    for gpu in GPU.objects.filter(runs=run).select_related("model").order_by("node__hostname", "index"):
        name = gpu.name or (gpu.model.name if gpu.model else "unknown model")
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{count} × {name}" for name, count in counts.items()) or None


def node_record(run: Run, part: RunNode, argv: list[str] | None = None) -> dict:
    """What the node worker knows before the training process reports: host, versions, packages, code commit.

    The driver is the one the node's agent last said hello with (None until an agent has reported).
    """
    code_dir = Path(run.script).parent if run.script else settings.BASE_DIR
    packages = installed_packages()
    cuda = built_cuda()
    return {
        "command": list(argv or []),
        "packages": packages,
        "git_dirty": git_dirty(code_dir),
        "python": platform.python_version(),
        "torch": package_version("torch"),
        "cuda": cuda,
        "cudnn": cudnn_wheel(packages) if cuda else None,
        "driver": part.node.driver_version or None,
        "gpu_models": gpu_models(run),
        "host": socket.gethostname(),
        "node": part.node.hostname,
        "git_commit": git_commit(code_dir),
        "cuda_visible_devices": ",".join(str(index) for index in part.gpu_indexes),
    }


def command_record(run: Run, part: RunNode, argv: list[str], workdir: str) -> dict:
    """A command run's reproducibility record: the argv as started (secrets masked), where, in what, which code."""
    secrets = secret_values(run.variables)
    return {
        "command": [redact(word, secrets) for word in argv],
        "workdir": workdir,
        "address": settings.RUN_RENDEZVOUS_HOST,
        "env": environments.get(run.env_kind).record(run.env_ref),
        "variables": sorted(run.variables),
        "git_commit": git_commit(workdir),
        "git_dirty": git_dirty(workdir),
        "driver": part.node.driver_version or None,
        "gpu_models": gpu_models(run),
        "host": socket.gethostname(),
        "node": part.node.hostname,
        "cuda_visible_devices": ",".join(str(index) for index in part.gpu_indexes),
    }
