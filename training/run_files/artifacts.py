"""A run's artifacts: the files its built-in workload leaves in the run's directory on the node, kept for download.

The node worker collects them once the run's processes have exited (``collect``): each known file is
moved from the run's directory (RUN_OUTPUT_DIR/run-<uuid>, on the node) to RUN_ARTIFACT_DIR/run-<uuid>/,
which the web servers read; on a fleet of several machines it is a directory they share. Deleting a
RunArtifact row (the run's deletion, or retention) deletes its file.
"""

import logging
import shutil
from pathlib import Path

from django.conf import settings
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.http import FileResponse, Http404

from training.choices import ArtifactKind
from training.models import Run, RunArtifact

log = logging.getLogger(__name__)

# The files a built-in workload writes (training/workloads: --save, --metrics-csv), by name.
KNOWN = {"model.pt": ArtifactKind.MODEL, "metrics.csv": ArtifactKind.METRICS}


def stored_path(artifact: RunArtifact) -> Path:
    return Path(settings.RUN_ARTIFACT_DIR) / artifact.path


def collect(run: Run, output_dir: Path) -> list[RunArtifact]:
    """Keep the known files the run left in ``output_dir``; a file that cannot be kept is logged, not fatal."""
    run_id = run.pk
    kept = []
    for name, kind in KNOWN.items():
        source = output_dir / name
        if not source.is_file() or source.is_symlink():
            continue  # a link could point at any file the node worker may read
        relative = f"{run.files_name}/{name}"
        target = Path(settings.RUN_ARTIFACT_DIR) / relative
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            source.unlink()
        except OSError:
            log.exception("run %s: could not keep %s", run_id, source)
            continue
        artifact, _ = RunArtifact.objects.update_or_create(
            run_id=run_id, name=name, defaults={"kind": kind, "path": relative, "size_bytes": target.stat().st_size}
        )
        kept.append(artifact)
    return kept


def download(artifact: RunArtifact) -> FileResponse:
    """The file as an attachment named after its run; 404 when the file itself is gone."""
    try:
        handle = stored_path(artifact).open("rb")
    except FileNotFoundError:
        raise Http404(f"The file of {artifact.name} is no longer on the server.") from None
    return FileResponse(handle, as_attachment=True, filename=f"run-{artifact.run_id}-{artifact.name}")


def of_run_or_404(run, name: str) -> RunArtifact:
    found = RunArtifact.objects.filter(run=run, name=name).first()
    if found is None:
        raise Http404(f"Run {run.pk} has no artifact named {name!r}.")
    return found


@receiver(post_delete, sender=RunArtifact)
def delete_file(sender, instance: RunArtifact, **kwargs) -> None:
    path = stored_path(instance)
    path.unlink(missing_ok=True)
    try:
        path.parent.rmdir()  # the run's folder, once its last file is gone
    except OSError:
        pass
