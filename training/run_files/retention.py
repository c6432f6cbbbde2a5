"""How long a finished run's files are kept: RUN_FILES_RETENTION_DAYS after its end (0 keeps them).

One setting and one hourly beat task (``delete_expired_run_files``) for everything a run leaves on the
fleet's storage: its checkpoints (training/run_files/checkpoint_dirs.py), its artifacts, the final model and the
metrics CSV (training/run_files/artifacts.py), and its profiler files (trace or pstats, kept in the database by
training/profiling/results.py; the tables of top operators stay). The run itself, its metrics and logs stay.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from training.choices import RunStatus
from training.models import Run, RunArtifact, RunProfile
from training.run_files import checkpoint_dirs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Deleted:
    """What one pass deleted: checkpoint directories (by run), artifact files, profiler files."""

    checkpoints: list[int]
    artifacts: int
    profiles: int

    def __bool__(self) -> bool:
        return bool(self.checkpoints or self.artifacts or self.profiles)


def expires_at(run: Run) -> datetime | None:
    """When the run's files go; None while it runs or when files are kept for ever."""
    if run.finished_at is None or not settings.RUN_FILES_RETENTION_DAYS:
        return None
    return run.finished_at + timedelta(days=settings.RUN_FILES_RETENTION_DAYS)


def expired(run: Run) -> bool:
    """Whether the run's files are past their retention (and so deleted, or about to be)."""
    ends = expires_at(run)
    return ends is not None and ends <= timezone.now()


def expired_runs(now: datetime) -> QuerySet[Run]:
    """Runs that ended more than the retention before ``now`` (none when files are kept for ever)."""
    if not settings.RUN_FILES_RETENTION_DAYS:
        return Run.objects.none()
    cutoff = now - timedelta(days=settings.RUN_FILES_RETENTION_DAYS)
    return Run.objects.filter(status__in=RunStatus.finished(), finished_at__lt=cutoff)


def delete_expired_run_files(now: datetime | None = None) -> Deleted:
    """Delete every file of the runs past their retention: checkpoints, artifacts, profiler files."""
    now = now or timezone.now()
    runs = expired_runs(now)
    checkpoints = [run.pk for run in checkpoint_dirs.not_deleted(runs) if checkpoint_dirs.delete(run, now)]
    artifacts, _ = RunArtifact.objects.filter(run__in=runs).delete()  # post_delete removes each file
    profiles = (
        RunProfile.objects.filter(run__in=runs)
        .exclude(size=0)
        .update(data=b"", size=0, note=f"Deleted: a finished run's files are kept {days()} days.")
    )
    deleted = Deleted(checkpoints, artifacts, profiles)
    if deleted:
        log.info("retention deleted %s", deleted)
    return deleted


def days() -> str:
    """The retention as the pages say it: 30, or 0.5."""
    return f"{settings.RUN_FILES_RETENTION_DAYS:g}"
