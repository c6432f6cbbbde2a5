"""How long a finished run's files are kept: RUN_FILES_RETENTION_DAYS after its end (0 keeps them).

The run itself, its metrics and logs stay; its files go. Beat runs ``delete_expired_run_files`` hourly.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from training.models import Run, RunArtifact


def expires_at(run: Run) -> datetime | None:
    """When the run's files go; None while it runs or when files are kept for ever."""
    if run.finished_at is None or not settings.RUN_FILES_RETENTION_DAYS:
        return None
    return run.finished_at + timedelta(days=settings.RUN_FILES_RETENTION_DAYS)


def expired(run: Run) -> bool:
    """Whether the run's files are past their retention (and so deleted, or about to be)."""
    ends = expires_at(run)
    return ends is not None and ends <= timezone.now()


def delete_expired_run_files(now: datetime | None = None) -> int:
    """Delete the artifacts (rows and files) of runs that ended more than the retention ago; how many."""
    if not settings.RUN_FILES_RETENTION_DAYS:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=settings.RUN_FILES_RETENTION_DAYS)
    deleted, _ = RunArtifact.objects.filter(run__finished_at__lt=cutoff).delete()  # post_delete removes each file
    return deleted
