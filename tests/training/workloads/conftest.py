"""Fixtures for tests that run real training processes on the CPU, without the fleet around them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# The workloads run from a checkout rather than an installed package, and the
# helpers beside this file are imported by name whatever pytest's import mode.
for path in (HERE.parents[2], HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from training_runs import Running  # noqa: E402

from fleet import embedded  # noqa: E402


@pytest.fixture
def start():
    """Start training commands; whatever a test leaves running is killed after it."""
    started: list[Running] = []

    def _start(argv: list[str]) -> Running:
        running = Running(argv)
        started.append(running)
        return running

    yield _start
    for running in started:
        running.kill()


@pytest.fixture
def free_port() -> int:
    return embedded.free_port()
