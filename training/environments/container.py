"""A container image: the run's command runs inside an admin-allowed image, started by podman or docker.

The node worker runs ``wrap()``'s argument list instead of the command: ``<runtime> run`` with the run's
GPUs, its OS account as the user, its working directory and the admin's data paths bind-mounted at the
same paths, the host's network (torchrun's rendezvous and NCCL reach the other nodes as from the host),
and a name made from the run and the node's rank, so ``stop()`` can stop and remove it after the node
worker signalled the runtime's client. Variables pass by name (``--env NAME``): the runtime copies each
value from its own environment, so no value is on a command line or in ``ps``. FLEET_RUN_ID alone is given
by value and kept from the client: the process inside, which the host sees with its own pid, is the run's
to the agent as any other process of the run is, and the client is not. docs/runs.md, Containers.
"""

from __future__ import annotations

import json
import logging
import math
import re
import subprocess

from django.conf import settings

from training.environments.base import Environment, EnvironmentRefused, Started

log = logging.getLogger(__name__)

MAX_IMAGE_CHARS = 255
# A reference as registries spell it: host[:port]/path[:tag][@digest]; no whitespace, NUL or leading "-".
IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@-]*\Z")
RUNTIME_TIMEOUT_S = 60.0  # an inspect, a listing or a removal; a stop gets its grace on top

# The run's tag, given inside by value (a run id is no secret): the runtime's client does not carry it, so
# the agent never takes the client, which holds no GPU, for one of the run's processes.
RUN_TAG = "FLEET_RUN_ID"
# The fleet's variables a process inside sees, passed by name like the run's own; a name the node worker
# did not set is skipped by the runtime. PATH, HOME and the fleet's PYTHONPATH stay the image's own.
FLEET_VARIABLES = (
    "FLEET_NODE",
    "FLEET_NODE_RANK",
    "FLEET_STRATEGY",
    "FLEET_NUM_NODES",
    "FLEET_NODE_IPS",
    "FLEET_GPUS_PER_NODE",
    "FLEET_WORKERS",
    "FLEET_OUTPUT_DIR",
    "FLEET_CHECKPOINT_DIR",
    "FLEET_CHECKPOINT_EVERY_STEPS",
    "FLEET_CHECKPOINT_EVERY_S",
    "FLEET_STOP_SIGNAL",
    "FLEET_STOP_GRACE_S",
    "FLEET_RESUME_DIR",
    "FLEET_RESUME_FROM",
    "MASTER_ADDR",
    "MASTER_PORT",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "PYTHONUNBUFFERED",
    "OMP_WAIT_POLICY",
)
# The fleet's directories a run writes to or resumes from: mounted when ``started.variables`` names them.
FLEET_DIRS = ("FLEET_OUTPUT_DIR", "FLEET_CHECKPOINT_DIR", "FLEET_RESUME_DIR", "FLEET_RESUME_FROM")


class ContainerError(EnvironmentRefused):
    """The container runtime is missing, timed out, or cannot do what a run needs (one sentence)."""


def runtime(args: list[str], timeout: float = RUNTIME_TIMEOUT_S) -> subprocess.CompletedProcess:
    """``<RUN_CONTAINER_RUNTIME> args``, its output captured; ContainerError when it is missing or hangs."""
    binary = settings.RUN_CONTAINER_RUNTIME
    try:
        return subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise ContainerError(
            f"The container runtime {binary!r} (RUN_CONTAINER_RUNTIME) is not installed on this node."
        ) from None
    except subprocess.TimeoutExpired:
        raise ContainerError(f"{binary} {args[0]} did not answer within {timeout:g} s.") from None


def container_name(started: Started) -> str:
    return f"fleet-run-{started.run_id}-{started.node_rank}"


def allowed(ref: str, allow_list: list[str]) -> bool:
    """An entry ending in "/" admits every image under it; a name admits itself and its tags and digests."""
    for entry in allow_list:
        if entry.endswith("/"):
            if ref.startswith(entry) and len(ref) > len(entry):
                return True
        elif ref == entry or ref.startswith((entry + ":", entry + "@")) and "/" not in ref[len(entry) :]:
            return True
    return False


def malformed(ref: str) -> str | None:
    """What makes ``ref`` no image reference, or None."""
    if len(ref) > MAX_IMAGE_CHARS:
        return f"is longer than {MAX_IMAGE_CHARS} characters"
    if "\0" in ref:
        return "contains a NUL byte"
    if any(char.isspace() for char in ref):
        return "contains whitespace"
    if ref.startswith("-"):
        return 'starts with "-"'
    if not IMAGE.match(ref) or "//" in ref or ".." in ref:
        return "is not an image reference (registry/name:tag or name@sha256:digest)"
    return None


class Image(Environment):
    name = "image"
    label = "a container image"
    needs_ref = True
    account_inside = True

    def check(self, ref: str) -> str | None:
        if not ref:
            return "Name the container image to run the command in."
        fault = malformed(ref)
        if fault:
            return f"The image name {ref[:80]!r} {fault}."
        if not settings.RUN_CONTAINER_IMAGES:
            return f"Container runs are off on this fleet (RUN_CONTAINER_IMAGES is empty), so {ref!r} cannot run."
        if not allowed(ref, settings.RUN_CONTAINER_IMAGES):
            allow_list = ", ".join(settings.RUN_CONTAINER_IMAGES)
            return f"The image {ref!r} is not allowed by RUN_CONTAINER_IMAGES ({allow_list})."
        return None

    def python(self, ref: str) -> str:
        return "python"  # the image's own, found on its PATH

    def torchrun(self, ref: str) -> list[str]:
        return ["python", "-m", "torch.distributed.run"]

    def wrap(self, argv: list[str], started: Started) -> list[str]:
        refused = self.check(started.ref)
        if refused:
            raise ContainerError(refused)
        return [
            settings.RUN_CONTAINER_RUNTIME,
            *self.run_options(started),
            *self.mounts(started),
            *self.gpus(started),
            *self.env_options(started),
            started.ref,
            *argv,
        ]

    def run_options(self, started: Started) -> list[str]:
        # --init: a small init as the container's pid 1 passes SIGTERM on (pid 1 itself would ignore it) and
        # reaps data loaders' orphans. no-new-privileges: a setuid binary in the image cannot make the run root.
        options = ["run", "--rm", "--init", "--name", container_name(started), "--network", "host"]
        options += ["--security-opt", "no-new-privileges"]
        if started.uid is not None:
            options += ["--user", f"{started.uid}:{started.gid if started.gid is not None else started.uid}"]
        return options + ["--workdir", started.workdir]

    def mounts(self, started: Started) -> list[str]:
        paths = [started.workdir, *settings.RUN_CONTAINER_MOUNTS]
        paths += [started.variables[name] for name in FLEET_DIRS if started.variables.get(name)]
        options = []
        for path in dict.fromkeys(paths):
            if not path.startswith("/") or ":" in path or "," in path:
                raise ContainerError(f"The directory {path!r} cannot be mounted: not absolute, or has ':' or ','.")
            options += ["-v", f"{path}:{path}"]
        return options

    def gpus(self, started: Started) -> list[str]:
        if not settings.RUN_CONTAINER_GPUS or not started.gpu_indexes:
            return []
        if settings.RUN_CONTAINER_RUNTIME == "docker":
            # Docker reads --gpus as CSV: the quotes keep "device=0,1" one field.
            return ["--gpus", '"device=' + ",".join(str(index) for index in started.gpu_indexes) + '"']
        return [option for index in started.gpu_indexes for option in ("--device", f"nvidia.com/gpu={index}")]

    def env_options(self, started: Started) -> list[str]:
        names = dict.fromkeys([*FLEET_VARIABLES, *sorted(started.variables)])
        names.pop(RUN_TAG, None)
        options = ["--env", f"{RUN_TAG}={started.run_id}"]
        if settings.RUN_CONTAINER_GPUS and started.gpu_indexes:
            # Inside, the run's GPUs are the only ones and CUDA numbers them from 0.
            names.pop("CUDA_VISIBLE_DEVICES", None)
            options += ["--env", "CUDA_VISIBLE_DEVICES=" + ",".join(map(str, range(len(started.gpu_indexes))))]
        for name in names:
            options += ["--env", name]
        return options

    def client_env(self, env: dict[str, str]) -> dict[str, str]:
        return {name: value for name, value in env.items() if name != RUN_TAG}

    def clear(self, started: Started) -> None:
        # A node worker that died mid-run leaves its container behind; the same share started again (or its
        # setup step's container still being removed) would find the name taken.
        name = container_name(started)
        self.quietly(name, ["rm", "-f", "-t", "0", name], RUNTIME_TIMEOUT_S)

    def stop(self, started: Started, grace_s: float) -> None:
        name = container_name(started)
        grace = max(0, math.ceil(grace_s))
        self.quietly(name, ["stop", "-t", str(grace), name], grace + RUNTIME_TIMEOUT_S)
        self.quietly(name, ["rm", "-f", name], RUNTIME_TIMEOUT_S)

    def quietly(self, name: str, args: list[str], timeout: float) -> None:
        """A stop's step: a container already gone is what was wanted; anything else is logged, not raised."""
        try:
            done = runtime(args, timeout)
        except ContainerError as error:
            log.warning("container %s: %s", name, error)
            return
        if done.returncode != 0 and not gone(done.stderr):
            log.warning("container %s: %s: %s", name, args[0], done.stderr.strip()[:500])

    def record(self, ref: str) -> dict:
        record = {"kind": self.name, "image": ref, "runtime": settings.RUN_CONTAINER_RUNTIME}
        try:
            done = runtime(["image", "inspect", ref])
        except ContainerError as error:
            return {**record, "error": str(error)}
        if done.returncode != 0:
            return {**record, "error": f"not on this node: {done.stderr.strip()[:300]}"}
        found = json.loads(done.stdout)[0]
        repo_digests = found.get("RepoDigests") or []
        digest = found.get("Digest") or (repo_digests[0].partition("@")[2] if repo_digests else None)
        return {**record, "id": found.get("Id"), "digest": digest, "repo_digests": repo_digests}

    def discover(self) -> list[str]:
        if not settings.RUN_CONTAINER_IMAGES:
            return []
        try:
            done = runtime(["images", "--format", "{{.Repository}}:{{.Tag}}"])
        except ContainerError as error:
            log.warning("%s", error)
            return []
        names = (line.strip() for line in done.stdout.splitlines() if "<none>" not in line)
        return sorted({name for name in names if name and allowed(name, settings.RUN_CONTAINER_IMAGES)})


def gone(stderr: str) -> bool:
    """The runtime's words for a container that is no longer there (stopped and removed by ``--rm``)."""
    text = stderr.lower()
    return "no such container" in text or "no container with name" in text
