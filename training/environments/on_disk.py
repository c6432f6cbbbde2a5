"""What a venv and a conda env share: a directory on the node, allowed only inside the roots of RUN_ENV_DIRS.

A path is checked after symlinks, so a link inside a root that points out of it is refused. The web server
may not have the directory; the node worker, which must, checks again before it starts anything.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from django.conf import settings

from training.environments.base import Environment

RECORD_TIMEOUT_S = 60.0
DISCOVER_DEPTH = 2


class OnDisk(Environment):
    """An environment that is a directory with ``bin/python`` and a marker its tool leaves (``marker``)."""

    needs_ref = True
    marker: str  # pyvenv.cfg, conda-meta
    what: str  # "a venv", "a conda env"
    prefix_variable: str  # names the active environment: VIRTUAL_ENV, CONDA_PREFIX

    def check(self, ref: str) -> str | None:
        roots = allowed_roots()
        if not roots:
            return (
                f"{self.label.capitalize()}s are turned off here: an admin lists their allowed roots in RUN_ENV_DIRS."
            )
        if not ref:
            return f"Give the path of {self.what} on the node."
        if not os.path.isabs(ref):
            return f"The path of {self.what} must be absolute, not {ref!r}."
        real = os.path.realpath(ref)
        if not any(inside(real, root) for root in roots):
            return (
                f"{ref} is not inside an allowed environment root ({', '.join(settings.RUN_ENV_DIRS)}; RUN_ENV_DIRS)."
            )
        if os.path.exists(real) and not self.holds_env(real):
            return f"{ref} is not {self.what}: it has no bin/python and {self.marker}."
        return None

    def check_on_node(self, ref: str) -> str | None:
        refused = self.check(ref)
        if refused is None and not os.path.exists(os.path.realpath(ref)):
            return f"{ref} does not exist on this node."
        return refused

    def holds_env(self, path: str) -> bool:
        return os.path.isfile(os.path.join(path, "bin", "python")) and os.path.exists(os.path.join(path, self.marker))

    def python(self, ref: str) -> str:
        return os.path.join(ref, "bin", "python")

    def variables(self, ref: str, env: Mapping[str, str]) -> dict[str, str]:
        path = os.pathsep.join(filter(None, [os.path.join(ref, "bin"), env.get("PATH", "")]))
        return {"PATH": path, self.prefix_variable: ref}

    def record(self, ref: str) -> dict:
        python = self.python(ref)
        return {
            "kind": self.name,
            "ref": ref,
            "python": python,
            "version": output([python, "--version"]),
            **self.packages(ref),
        }

    def packages(self, ref: str) -> dict:
        """Its packages, one line each as its tool exports them."""
        raise NotImplementedError

    def discover(self) -> list[str]:
        found = set()
        for root in settings.RUN_ENV_DIRS:
            for path in walk(Path(root), DISCOVER_DEPTH):
                if self.holds_env(str(path)) and self.check(str(path)) is None:
                    found.add(str(path))
        return sorted(found)


def allowed_roots() -> list[str]:
    return [os.path.realpath(root) for root in settings.RUN_ENV_DIRS if root]


def inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def walk(root: Path, depth: int) -> list[Path]:
    """``root`` and the directories below it, at most ``depth`` levels down."""
    found, level = [root], [root]
    for _ in range(depth):
        below = []
        for path in level:
            try:
                below += [child for child in path.iterdir() if child.is_dir()]
            except OSError:
                continue
        found += below
        level = below
    return found


def output(argv: list[str]) -> str | None:
    """What ``argv`` printed (stdout, else stderr), stripped; None when it failed or took too long."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RECORD_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return (done.stdout or done.stderr).strip()
