"""The gpu_fleet_events helper prints exactly the FLEET_EVENT lines the node worker's stream reads."""

import io
import sys
import time

import pytest

from tests.support.processes import BASE_DIR
from training.workloads import event_lines

sys.path.insert(0, str(BASE_DIR / "clients" / "gpu_fleet_events"))
import gpu_fleet_events  # noqa: E402


def test_a_helper_line_is_byte_for_byte_the_workloads_line():
    fields = {"step": 7, "loss": 0.25, "accuracy": float("nan"), "note": 'a "quoted" word'}
    assert gpu_fleet_events.format_event("progress", **fields) == event_lines.format_event("progress", **fields)
    assert gpu_fleet_events.PREFIX == event_lines.PREFIX


def test_log_prints_one_progress_line_the_stream_parses(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    gpu_fleet_events.log(step=12, loss=0.5, accuracy=0.9, epoch=1)
    line = out.getvalue()
    assert line.endswith("\n") and line.count("\n") == 1
    event = event_lines.parse_event(line.rstrip("\n"))
    assert {key: event[key] for key in ("event", "step", "loss", "accuracy", "epoch")} == {
        "event": "progress",
        "step": 12,
        "loss": 0.5,
        "accuracy": 0.9,
        "epoch": 1,
    }
    assert event["ts"] == pytest.approx(time.time(), abs=60)
