"""Where a run's checkpoints live (one directory per run under RUN_CHECKPOINT_DIR), their size, their deletion.

A run's own directory is named after its UUID (Run.files_name), never its number, which a database made
afresh gives again: a new run never finds, shows or resumes from checkpoints an earlier run left.

The training process saves them (training/workloads/checkpoints.py) and reports each one with a
``checkpoint`` event, which training/node/stream.py records on the run. Nothing here reads a checkpoint.
"""

import os
import shutil
from pathlib import Path

from django.conf import settings

from training.models import Run

FILE = "checkpoint.pt"  # the name training/workloads/checkpoints.py saves under


def root() -> Path:
    return Path(os.path.realpath(settings.RUN_CHECKPOINT_DIR))


def default_dir(run: Run) -> Path:
    """Its directory when the researcher named none: run-<uuid>, never a name another run had."""
    return root() / run.files_name


def inside_root(path: str | Path) -> Path | None:
    """``path`` resolved (symlinks and ``..`` followed), when it lies strictly below the root; else None."""
    resolved = Path(os.path.realpath(path))
    return resolved if resolved != root() and resolved.is_relative_to(root()) else None


def check_dir(requested: str) -> tuple[str, str]:
    """A researcher's checkpoint directory, relative to the root or absolute: (its path relative to the root, error).

    Stored relative, so that each host finds it under its own RUN_CHECKPOINT_DIR: the web server and a
    node worker may mount the same storage at different paths, or be installed in different places."""
    requested = (requested or "").strip()
    if not requested:
        return "", ""
    if "\x00" in requested or len(requested) > 900:
        return "", "Give a directory path of at most 900 characters."
    resolved = inside_root(root() / requested)
    if resolved is None:
        return "", f"A checkpoint directory must lie inside {root()} (RUN_CHECKPOINT_DIR); {requested!r} does not."
    return str(resolved.relative_to(root())), ""


def run_dir(run: Run) -> Path:
    """The run's directory on this host (an absolute path stored by an earlier version is kept as it is)."""
    return root() / run.checkpoint_dir if run.checkpoint_dir else default_dir(run)


def prepare(run: Run, account) -> Path:
    """The run's checkpoint directory on this node, created and owned by the account the run runs as."""
    path = run_dir(run)
    if inside_root(path) is None:
        raise ValueError(f"checkpoint directory {path} is outside RUN_CHECKPOINT_DIR")
    path.mkdir(parents=True, exist_ok=True)
    if account is not None:
        os.chown(path, account.uid, account.gid)
    path.chmod(0o750)
    return path


def files(run: Run) -> list[Path]:
    """The files in the run's checkpoint directory (a user script may save any it likes)."""
    path = run_dir(run)
    if inside_root(path) is None or not path.is_dir():
        return []
    return [entry for entry in path.rglob("*") if entry.is_file() and not entry.name.endswith(".partial")]


def size_bytes(run: Run) -> int | None:
    """What the run's checkpoints take on disk now; None when there are none."""
    found = files(run)
    return sum(entry.stat().st_size for entry in found) if found else None


def not_deleted(runs):
    """Those of ``runs`` whose checkpoint directory retention has not deleted yet (a blank one is the default)."""
    fields = ("pk", "uuid", "files_dir_name", "checkpoint_dir", "checkpoint")
    return runs.exclude(checkpoint__has_key="deleted_at").only(*fields)


def delete(run: Run, now) -> bool:
    """Delete the run's checkpoint directory (training/run_files/retention.py decides when); the run says it is gone."""
    path = inside_root(run_dir(run))
    if path is not None and path.exists():
        shutil.rmtree(path, ignore_errors=True)
    return bool(Run.objects.filter(pk=run.pk).update(checkpoint={**run.checkpoint, "deleted_at": now.isoformat()}))
