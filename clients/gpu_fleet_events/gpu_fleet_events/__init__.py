"""Report training progress to GPU Fleet from any program: ``from gpu_fleet_events import log``.

``log(step=100, loss=0.31, accuracy=0.92)`` prints one ``FLEET_EVENT {json}`` line to stdout and flushes;
the node worker that started the run turns it into a point on the run's curves. Outside a fleet run the line
is just printed. Pure Python, no dependencies; the line format is the one training/workloads/event_lines.py
writes and parses (docs/workloads.md), and the fleet's tests hold the two to the same bytes.
"""

import json
import math
import sys
import time

__version__ = "1.0.0"
__all__ = ["PREFIX", "event", "format_event", "log"]

PREFIX = "FLEET_EVENT "


def format_event(name, **fields):
    """One protocol line (without the newline); non-finite floats become null."""
    payload = {"event": name}
    for key, value in fields.items():
        payload[key] = None if isinstance(value, float) and not math.isfinite(value) else value
    return PREFIX + json.dumps(payload, allow_nan=False, separators=(",", ":"))


def event(name, stream=None, **fields):
    """Print one event line ("progress", "checkpoint", "done" …) and flush, so the node worker sees it at once."""
    stream = stream or sys.stdout
    stream.write(format_event(name, **fields) + "\n")
    stream.flush()


def log(step, loss=None, accuracy=None, epoch=None, samples_per_s=None, **more):
    """A point on the run's curves at ``step`` (a whole number from 0): loss, accuracy, epoch, throughput."""
    fields = {"step": int(step), "ts": time.time()}
    named = {"loss": loss, "accuracy": accuracy, "epoch": epoch, "samples_per_s": samples_per_s}
    fields.update({key: value for key, value in named.items() if value is not None})
    fields.update(more)
    event("progress", **fields)
