"""The environment every training process starts with, whoever starts it (node worker, Hogwild supervisor, tests)."""

from __future__ import annotations

import os
from collections.abc import Mapping

# OpenMP threads that sleep rather than spin while they wait: on a two-core node
# with another process busy, spinning threads collapse a two-thread run's
# throughput and sleeping ones keep most of it (docs/benchmarks.md#training).
# It must be in the environment before torch is imported, so it is given to the
# process rather than set by the script.
RUN_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


def run_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a training process: ``base`` (default os.environ) over RUN_ENV."""
    return {**RUN_ENV, **(os.environ if base is None else base)}
