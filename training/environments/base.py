"""What every environment kind answers: whether a run may use it, and how the node worker starts a command in it."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field


class EnvironmentRefused(Exception):
    """A run cannot start in this environment on this node (one sentence the run's error shows)."""


@dataclass(frozen=True)
class Started:
    """What the node worker knows when it starts a run's command on one node (for wrapping and recording)."""

    run_id: int
    node_rank: int
    workdir: str
    gpu_indexes: list[int] = field(default_factory=list)
    variables: dict[str, str] = field(default_factory=dict)  # set in the process's environment
    uid: int | None = None  # the OS account the command runs as
    gid: int | None = None
    ref: str = ""  # the environment's path or image (the run's env_ref)


class Environment:
    """One kind of environment; ``ref`` is its path on the node or its image name ("" for the fleet's own)."""

    name: str  # stored on the run
    label: str  # shown in forms and on run pages
    needs_ref = False  # a path or an image must be given
    # wrap() puts the run's OS account inside (a container's --user): the node worker then starts the wrapped
    # argument list as itself, since a container runtime's client needs the node worker's rights.
    account_inside = False

    def check(self, ref: str) -> str | None:
        """Why a run may not use this environment (one sentence, naming the value), or None. Runs on the web
        server before anything is stored, and again on the node before anything starts."""
        if ref and not self.needs_ref:
            return f"The {self.label} takes no path or image; leave it empty."
        return None

    def python(self, ref: str) -> str:
        """The interpreter that runs Python programs in it."""
        return sys.executable

    def check_on_node(self, ref: str) -> str | None:
        """Why the node worker may not start a command in it here (``check`` and what only the node can see)."""
        return self.check(ref)

    def variables(self, ref: str, env: Mapping[str, str]) -> dict[str, str]:
        """What its commands get in their environment (its bin first on PATH, VIRTUAL_ENV …) over ``env``."""
        return {}

    def torchrun(self, ref: str) -> list[str]:
        """The argument list that starts torchrun in it."""
        return [self.python(ref), "-m", "torch.distributed.run"]

    def wrap(self, argv: list[str], started: Started) -> list[str]:
        """The argument list the node worker runs (a container kind wraps ``argv`` in its runtime)."""
        return argv

    def client_env(self, env: dict[str, str]) -> dict[str, str]:
        """The environment the wrapped argument list starts with (a container runtime's client: without the
        run's tag, which only the processes inside carry)."""
        return env

    def clear(self, started: Started) -> None:
        """Before each start of the share's command: remove what an earlier start of it left (a container of the
        same name, whose name the new one needs). Nothing to do for a process on the node itself."""

    def stop(self, started: Started, grace_s: float) -> None:
        """After the node worker signalled the command's process tree: end what lives outside it (a container
        is stopped, then removed). Nothing to do for a process on the node itself."""

    def record(self, ref: str) -> dict:
        """What a run's reproducibility record keeps of it (interpreter and packages, or image and digest)."""
        return {"kind": self.name}

    def discover(self) -> list[str]:
        """The refs of this kind present on this node, for the launch form and the CLI (empty: none to offer)."""
        return []
