"""The environment every training process starts with, whoever starts it (node worker, Hogwild supervisor, tests)."""

from __future__ import annotations

import os
from collections.abc import Mapping

# OpenMP threads that sleep rather than spin while they wait. Measured on a
# two-core node with another process busy: a two-thread digits run fell from
# ~6,000 to 300-700 samples/s with spinning threads, and kept ~4,000-6,500
# with this. It must be in the environment before torch is imported, so it is
# given to the process rather than set by the script.
RUN_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


def run_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a training process: ``base`` (default os.environ) over RUN_ENV."""
    return {**RUN_ENV, **(os.environ if base is None else base)}
