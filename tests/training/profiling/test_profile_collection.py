"""The node worker reads what a profiled run left in its directory as untrusted input."""

import gzip
import json
import os

import pytest

from training.models import Run, RunProfile
from training.profiling import results

pytestmark = pytest.mark.django_db

SUMMARY = {
    "kind": "torch",
    "window": {"wait": 1, "warmup": 1, "active": 2},
    "operators": [{"name": "aten::mm", "calls": 4, "self_cpu_us": 120.5, "cpu_total_us": 130.0, "self_cuda_us": None}],
    "split": {"steps": 2, "step_us": 500.0, "total_us": 1000.0, "data_us": 100.0, "communication_us": None},
}


@pytest.fixture
def run(cast, tmp_path, settings):
    settings.RUN_OUTPUT_DIR = tmp_path
    return Run.objects.create(
        owner=cast["owner"], name="profiled", workload="digits_cnn", strategy="single", profiler={"kind": "torch"}
    )


def rank_dir(run: Run, rank: int = 0):
    folder = results.profile_dir(run) / f"rank-{rank}"
    folder.mkdir(parents=True)
    return folder


def test_a_rank_is_stored_with_its_trace_compressed(run):
    folder = rank_dir(run)
    (folder / "summary.json").write_text(json.dumps(SUMMARY))
    (folder / "trace.json").write_text(json.dumps({"traceEvents": [{"name": "x"}]}))

    lines = results.collect(run)

    profile = RunProfile.objects.get(run=run)
    assert lines == ["[fleet] profile of rank 0 kept (trace.json 0.0 MB)"]
    assert json.loads(gzip.decompress(bytes(profile.data))) == {"traceEvents": [{"name": "x"}]}
    assert profile.summary["operators"][0] == SUMMARY["operators"][0]
    assert profile.summary["split"]["data_us"] == 100.0 and profile.summary["split"]["compute_us"] is None
    assert not results.profile_dir(run).exists()  # the node's copy goes once the database holds it


def test_a_symbolic_link_planted_by_the_run_is_not_followed(run, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the run")
    folder = rank_dir(run)
    (folder / "summary.json").write_text(json.dumps(SUMMARY))
    os.symlink(secret, folder / "trace.json")

    lines = results.collect(run)

    profile = RunProfile.objects.get(run=run)
    assert bytes(profile.data) == b"" and profile.size == 0 and "cannot be read" in profile.note
    assert "no trace.json" in lines[0]
    assert secret.read_text() == "not for the run"


def test_a_linked_rank_directory_is_skipped(run, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "summary.json").write_text(json.dumps(SUMMARY))
    results.profile_dir(run).mkdir(parents=True)
    os.symlink(elsewhere, results.profile_dir(run) / "rank-0")

    assert results.collect(run) == []
    assert not RunProfile.objects.exists()


def test_a_trace_over_the_limit_keeps_the_summary_and_says_why(run, settings):
    settings.RUN_PROFILE_MAX_BYTES = 1000
    folder = rank_dir(run)
    (folder / "summary.json").write_text(json.dumps(SUMMARY))
    (folder / "trace.json").write_text("x" * 5000)

    results.collect(run)

    profile = RunProfile.objects.get(run=run)
    assert profile.size == 0 and "over RUN_PROFILE_MAX_BYTES" in profile.note
    assert profile.summary["operators"]
    assert (folder / "trace.json").stat().st_size == 5000  # not kept: the node's copy stays for its owner


@pytest.mark.parametrize(
    ("summary", "why"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not an object"),
        ('{"operators": "many"}', "no table"),
        ("[" * 100_000 + "]" * 100_000, "not JSON"),
    ],
)
def test_a_malformed_summary_is_not_kept_and_the_log_says_so(run, summary, why):
    folder = rank_dir(run)
    (folder / "summary.json").write_text(summary)

    lines = results.collect(run)

    assert not RunProfile.objects.exists()
    assert lines[0].startswith("[fleet] profile of rank 0 not kept") and why in lines[0]


def test_hostile_rows_are_cleaned_field_by_field(run):
    rows = [
        {"name": "a\x00b\ud800" + "x" * 1000, "calls": "many", "self_cpu_us": float("inf"), "cpu_total_us": -3},
        "not a row",
        *[{"name": f"op{i}", "calls": 1, "self_cpu_us": 1.0, "cpu_total_us": 1.0} for i in range(100)],
    ]
    folder = rank_dir(run)
    (folder / "summary.json").write_text(json.dumps({**SUMMARY, "operators": rows}))

    results.collect(run)

    operators = RunProfile.objects.get(run=run).summary["operators"]
    first = operators[0]
    assert len(operators) == 49 and first["name"].startswith("ab?") and len(first["name"]) == 499
    assert first["calls"] is None and first["self_cpu_us"] is None and first["cpu_total_us"] is None


def test_nothing_is_collected_for_a_run_without_the_profiler(run):
    run.profiler = {}
    rank_dir(run)

    assert results.collect(run) == []
