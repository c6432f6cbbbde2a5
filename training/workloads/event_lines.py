"""The event protocol between a training process and whoever reads its stdout.

A workload reports by printing one line ``FLEET_EVENT {json}`` to stdout and
flushing; every other line is log text. This module is pure Python (no torch,
no Django) so the node worker can import ``parse_event`` cheaply.
See docs/workloads.md for the events and their fields.
"""

from __future__ import annotations

import json
import math
import sys
import time
from typing import Any, TextIO

PREFIX = "FLEET_EVENT "
EVENTS = ("env", "first_step", "progress", "checkpoint", "done")


def format_event(event: str, **fields: Any) -> str:
    """One protocol line (without the newline); non-finite floats become null."""
    payload = {"event": event, **{key: _finite(value) for key, value in fields.items()}}
    return PREFIX + json.dumps(payload, allow_nan=False, separators=(",", ":"))


def emit(event: str, stream: TextIO | None = None, **fields: Any) -> None:
    """Print one event line and flush, so a reader sees it at once."""
    stream = stream or sys.stdout
    stream.write(format_event(event, **fields) + "\n")
    stream.flush()


def parse_event(line: str) -> dict[str, Any] | None:
    """The event on a line, or None for log text.

    The marker may follow a prefix (torchrun's ``--tee`` adds ``[default0]:``),
    so it is searched for rather than required at column 0. A line that carries
    the marker but no JSON object is treated as log text, never as an error.
    """
    start = line.find(PREFIX)
    if start < 0:
        return None
    try:
        payload = json.loads(line[start + len(PREFIX) :])
    except ValueError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("event"), str):
        return None
    return payload


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class ProgressThrottle:
    """Lets a progress event through at most once per ``interval`` seconds."""

    def __init__(self, interval: float = 0.25, clock=time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        self.last: float | None = None

    def ready(self, force: bool = False) -> bool:
        now = self.clock()
        if force or self.last is None or now - self.last >= self.interval:
            self.last = now
            return True
        return False
