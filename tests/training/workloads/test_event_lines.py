"""The FLEET_EVENT line protocol between workloads and the node worker."""

import io
import json

from training.workloads import event_lines


def test_an_event_is_one_line_the_reader_parses_back():
    stream = io.StringIO()
    event_lines.emit("progress", stream=stream, step=3, epoch=1, loss=0.5, accuracy=None, samples_per_s=100.0, ts=1.5)

    line = stream.getvalue()
    assert line.startswith("FLEET_EVENT {") and line.endswith("\n") and line.count("\n") == 1
    assert event_lines.parse_event(line) == {
        "event": "progress",
        "step": 3,
        "epoch": 1,
        "loss": 0.5,
        "accuracy": None,
        "samples_per_s": 100.0,
        "ts": 1.5,
    }


def test_log_text_is_not_an_event():
    assert event_lines.parse_event("epoch 1/8: held-out accuracy 0.9\n") is None
    assert event_lines.parse_event("FLEET_EVENT not json") is None
    assert event_lines.parse_event('FLEET_EVENT ["a list"]') is None
    assert event_lines.parse_event('FLEET_EVENT {"no": "event key"}') is None


def test_an_event_behind_a_torchrun_prefix_still_parses():
    assert event_lines.parse_event('[default0]:FLEET_EVENT {"event": "done"}') == {"event": "done"}


def test_a_non_finite_number_is_sent_as_null():
    line = event_lines.format_event("progress", loss=float("nan"), samples_per_s=float("inf"))
    assert json.loads(line.removeprefix(event_lines.PREFIX)) == {
        "event": "progress",
        "loss": None,
        "samples_per_s": None,
    }


def test_the_throttle_lets_through_at_most_one_event_per_interval():
    now = [0.0]
    throttle = event_lines.ProgressThrottle(0.25, clock=lambda: now[0])
    assert throttle.ready()
    now[0] = 0.1
    assert not throttle.ready()
    assert throttle.ready(force=True)
    now[0] = 0.4
    assert throttle.ready()
