"""The workloads' profiler: its flags are checked like any other, and a window cut short still writes its trace."""

import json

import pytest
import torch
from torch import nn

from training.workloads import arguments, digits_cnn, profiling


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--profile-active", "0"], "active steps must be between 1 and 50"),
        (["--profile-wait", "-1"], "wait must be between 0 and 10000"),
        (["--profile-warmup", "101"], "warm-up must be between 0 and 100"),
    ],
)
def test_a_window_out_of_range_is_refused_before_training(flags, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        arguments.parse_args(digits_cnn, ["--tiny", "--profile", *flags])

    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_the_window_is_not_checked_when_the_profiler_is_off():
    assert not arguments.parse_args(digits_cnn, ["--tiny", "--profile-active", "0"]).profile


def test_a_window_the_run_ends_inside_still_writes_what_it_recorded(tmp_path):
    profiler = profiling.StepProfiler(profiling.Window(1, 0, 10), tmp_path, torch.device("cpu"))
    model = nn.Linear(8, 2)
    for _ in range(4):  # the run ends after 3 recorded steps of 10
        with profiler.data_span():
            x = torch.randn(16, 8)
        model(x).sum().backward()
        profiler.step()
    profiler.close()

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["split"]["steps"] == 3 and summary["split"]["data_us"] > 0
    assert any(row["name"] == "aten::addmm" and row["self_cpu_us"] > 0 for row in summary["operators"])
    assert json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert not profiler.running
