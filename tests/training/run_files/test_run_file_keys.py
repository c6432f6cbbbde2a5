"""A run's files are keyed by its UUID, not its number: a fresh database numbers runs from 1 again, and a
new run must never see, resume from or collect the files an earlier database's run of that number left."""

from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from tests.training.conftest import gpus_of, start_run
from training.choices import RunStatus
from training.launching.resume_run import ResumeRefused, check_resumable
from training.models import Run
from training.node import run_as
from training.run_files import artifacts, checkpoint_dirs

pytestmark = pytest.mark.django_db


def left_over(root: Path, run_id: int, name: str, content: bytes = b"someone else's") -> Path:
    """A file an earlier database's run with this number left under the old name, run-<id>."""
    folder = Path(root) / f"run-{run_id}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(content)
    return folder / name


def ended(run: Run) -> Run:
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED, finished_at=timezone.now())
    run.refresh_from_db()
    return run


@pytest.fixture
def output_roots(settings, tmp_path):
    settings.RUN_OUTPUT_DIR = tmp_path / "runs"
    settings.RUN_ARTIFACT_DIR = tmp_path / "artifacts"


def test_a_new_run_does_not_see_or_resume_from_a_checkpoint_left_under_its_number(cast, quiet_node):
    run = start_run(cast["owner"], gpus_of(quiet_node, 1))
    left_over(checkpoint_dirs.root(), run.pk, checkpoint_dirs.FILE)

    assert checkpoint_dirs.files(run) == [] and checkpoint_dirs.size_bytes(run) is None
    with pytest.raises(ResumeRefused, match="no checkpoint"):
        check_resumable(ended(run), cast["owner"])
    assert checkpoint_dirs.run_dir(run) != checkpoint_dirs.root() / f"run-{run.pk}"


def test_a_new_run_does_not_collect_artifacts_left_under_its_number(cast, quiet_node, output_roots):
    run = start_run(cast["owner"], gpus_of(quiet_node, 1))
    left_over(settings.RUN_OUTPUT_DIR, run.pk, "model.pt")
    theirs = left_over(settings.RUN_ARTIFACT_DIR, run.pk, "model.pt", b"an earlier run's kept model")

    assert run_as.run_dir(run) != Path(settings.RUN_OUTPUT_DIR) / f"run-{run.pk}"
    assert artifacts.collect(run, run_as.run_dir(run)) == []
    assert not run.artifacts.exists()
    assert theirs.read_bytes() == b"an earlier run's kept model"


def test_two_runs_never_share_a_directory_name(cast, quiet_node):
    first = start_run(cast["owner"], gpus_of(quiet_node, 1))
    second = start_run(cast["owner"], gpus_of(quiet_node, 1))

    assert first.uuid != second.uuid
    assert first.files_name == f"run-{first.uuid}" and first.checkpoint_dir == first.files_name
    assert checkpoint_dirs.run_dir(first) != checkpoint_dirs.run_dir(second)
