"""The fleet's own interpreter: the node worker's Python and its packages; the built-in workloads run here."""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from importlib import metadata

from django.conf import settings

from training.environments.base import Environment

# The helper that prints curve points (clients/gpu_fleet_events), importable by commands in the fleet's Python.
EVENTS_CLIENT = settings.BASE_DIR / "clients" / "gpu_fleet_events"


class Fleet(Environment):
    name = "fleet"
    label = "the fleet's Python"

    def python(self, ref: str) -> str:
        # A node may give runs another interpreter than its own (RUN_PYTHON).
        return settings.RUN_PYTHON

    def variables(self, ref: str, env: Mapping[str, str]) -> dict[str, str]:
        return {"PYTHONPATH": os.pathsep.join(filter(None, [str(EVENTS_CLIENT), env.get("PYTHONPATH", "")]))}

    def record(self, ref: str) -> dict:
        return {
            "kind": self.name,
            "python": self.python(ref),
            "version": platform.python_version(),
            "packages": packages(),
        }


def packages() -> list[str]:
    """The node worker's distributions as ``pip freeze`` writes them (name==version), sorted by name."""
    found = {dist.metadata.get("Name", "").lower(): dist.version for dist in metadata.distributions()}
    return [f"{name}=={version}" for name, version in sorted(found.items()) if name]
