"""One retention for everything a run leaves: RUN_FILES_RETENTION_DAYS deletes the checkpoints, artifacts
and profiler files of runs that ended longer ago, and nothing of a recent or a running run; the
checkpoints' old setting still works as a deprecated name."""

import gzip
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from tests.fleet.test_settings import BASE_ENV
from tests.training.conftest import gpus_of, start_run
from training.choices import RunStatus
from training.models import Run, RunArtifact, RunProfile
from training.run_files import checkpoint_dirs
from training.run_files.artifacts import stored_path
from training.run_files.retention import delete_expired_run_files
from training.tasks import delete_old_checkpoints

pytestmark = pytest.mark.django_db


def with_files(run: Run, status: str, ended_ago: timedelta | None) -> Run:
    """The run in ``status`` (ended ``ended_ago``, or still going), with a checkpoint, an artifact and a trace."""
    finished = None if ended_ago is None else timezone.now() - ended_ago
    Run.objects.filter(pk=run.pk).update(
        status=status,
        started_at=timezone.now() - timedelta(days=60),
        finished_at=finished,
        checkpoint={"step": 90, "bytes": 5, "reason": "stop"},
    )
    folder = checkpoint_dirs.run_dir(run)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / checkpoint_dirs.FILE).write_bytes(b"state")
    artifact = RunArtifact(run=run, name="model.pt", kind="model", path=f"run-{run.pk}/model.pt", size_bytes=7)
    stored_path(artifact).parent.mkdir(parents=True, exist_ok=True)
    stored_path(artifact).write_bytes(b"weights")
    artifact.save()
    RunProfile.objects.create(run=run, rank=0, kind="torch", data=gzip.compress(b"{}"), size=2)
    run.refresh_from_db()
    return run


def files_of(run: Run) -> dict:
    run.refresh_from_db()
    return {
        "checkpoint": (checkpoint_dirs.run_dir(run) / checkpoint_dirs.FILE).exists(),
        "artifact": stored_path(RunArtifact(run=run, path=f"run-{run.pk}/model.pt")).exists(),
        "artifact row": run.artifacts.exists(),
        "trace": RunProfile.objects.filter(run=run).exclude(size=0).exists(),
    }


KEPT = {"checkpoint": True, "artifact": True, "artifact row": True, "trace": True}


@pytest.fixture
def runs(cast, quiet_node, settings, tmp_path):
    """alice's run that ended 8 days ago, one that ended 6 days ago, and one running for 60 days."""
    settings.RUN_ARTIFACT_DIR = tmp_path / "artifacts"
    gpus = gpus_of(quiet_node, 1)
    old = with_files(start_run(cast["owner"], gpus), RunStatus.SUCCEEDED, timedelta(days=8))
    recent = with_files(start_run(cast["owner"], gpus), RunStatus.CANCELLED, timedelta(days=6))
    running = with_files(start_run(cast["owner"], gpus), RunStatus.RUNNING, None)
    return old, recent, running


def test_one_setting_deletes_every_file_of_an_old_run_and_none_of_a_recent_or_running_one(runs, settings):
    settings.RUN_FILES_RETENTION_DAYS = 7
    old, recent, running = runs

    deleted = delete_expired_run_files()

    assert (deleted.checkpoints, deleted.artifacts, deleted.profiles) == ([old.pk], 1, 1)
    assert files_of(old) == dict.fromkeys(KEPT, False)
    assert old.checkpoint["deleted_at"] and not checkpoint_dirs.run_dir(old).exists()
    assert "kept 7 days" in RunProfile.objects.get(run=old).note  # the table stays, the file goes
    assert files_of(recent) == KEPT and files_of(running) == KEPT
    assert not delete_expired_run_files()  # nothing left to delete: a second pass is a no-op


def test_a_day_later_the_recent_run_goes_too_and_the_running_one_never(runs, settings):
    settings.RUN_FILES_RETENTION_DAYS = 7
    old, recent, running = runs

    deleted = delete_expired_run_files(now=timezone.now() + timedelta(days=1, hours=1))

    assert sorted(deleted.checkpoints) == [old.pk, recent.pk]
    assert files_of(recent) == dict.fromkeys(KEPT, False) and files_of(running) == KEPT


def test_zero_keeps_every_file(runs, settings):
    settings.RUN_FILES_RETENTION_DAYS = 0
    old, _, _ = runs

    assert not delete_expired_run_files(now=timezone.now() + timedelta(days=3650))
    assert files_of(old) == KEPT


def test_the_checkpoints_old_task_name_does_the_same(runs, settings):
    settings.RUN_FILES_RETENTION_DAYS = 7
    old, recent, _ = runs

    assert delete_old_checkpoints() == {"checkpoints": [old.pk], "artifacts": 1, "profiles": 1}
    assert files_of(recent) == KEPT


def settings_of(**env) -> subprocess.CompletedProcess:
    """Start Django in a fresh process with these variables; it prints the retention it read."""
    code = (
        "from fleet.startup import setup_django; setup_django(); "
        "from django.conf import settings; print(settings.RUN_FILES_RETENTION_DAYS)"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**BASE_ENV, **env},
        cwd=django_settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_default_is_thirty_days_without_a_warning():
    started = settings_of()
    assert (started.returncode, started.stdout.strip(), started.stderr) == (0, "30.0", "")


def test_the_checkpoints_old_name_still_works_with_a_warning():
    started = settings_of(RUN_CHECKPOINT_RETENTION_DAYS="14")

    assert started.returncode == 0 and started.stdout.strip() == "14.0"
    assert started.stderr.strip().splitlines() == [
        "GPU Fleet configuration warning: RUN_CHECKPOINT_RETENTION_DAYS is deprecated; set RUN_FILES_RETENTION_DAYS "
        "instead."
    ]


def test_both_names_with_the_same_value_start_with_the_warning():
    started = settings_of(RUN_CHECKPOINT_RETENTION_DAYS="10", RUN_FILES_RETENTION_DAYS="10")
    assert started.returncode == 0 and started.stdout.strip() == "10.0" and "deprecated" in started.stderr


@pytest.mark.parametrize(
    "env, words",
    [
        ({"RUN_CHECKPOINT_RETENTION_DAYS": "14", "RUN_FILES_RETENTION_DAYS": "30"}, "disagree"),
        ({"RUN_CHECKPOINT_RETENTION_DAYS": "0"}, "keeps a run's files for ever"),
        ({"RUN_CHECKPOINT_RETENTION_DAYS": "two weeks"}, "is not a number"),
        ({"RUN_FILES_RETENTION_DAYS": "-1"}, "at least 0"),
    ],
)
def test_a_conflicting_or_bad_retention_stops_start_up_with_one_line(env, words):
    started = settings_of(**env)

    assert started.returncode != 0 and not started.stdout
    lines = started.stderr.strip().splitlines()  # a bad value under the old name also gets the warning first
    assert all(line.startswith("GPU Fleet configuration ") for line in lines), started.stderr
    assert lines[-1].startswith("GPU Fleet configuration error:") and words in lines[-1], lines


def test_a_run_stored_without_a_checkpoint_directory_has_its_default_one_deleted(runs, settings):
    """Earlier versions left a pooled sweep's runs blank; the node still wrote to the default, which must go too."""
    settings.RUN_FILES_RETENTION_DAYS = 7
    old, _, _ = runs
    Run.objects.filter(pk=old.pk).update(checkpoint_dir="")
    old.refresh_from_db()
    assert (checkpoint_dirs.run_dir(old) / checkpoint_dirs.FILE).exists()

    deleted = delete_expired_run_files()

    assert deleted.checkpoints == [old.pk]
    assert not checkpoint_dirs.default_dir(old).exists() and files_of(old)["checkpoint"] is False
