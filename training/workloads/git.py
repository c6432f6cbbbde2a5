"""The git commit a piece of code runs from, for a run's environment record (no Django: workloads import it)."""

import subprocess
from pathlib import Path


def git_commit(path: str | Path) -> str | None:
    """The commit checked out where ``path`` lives, or None outside a git repository."""
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


def git_dirty(path: str | Path) -> bool | None:
    """Whether the checkout where ``path`` lives has uncommitted changes; None outside a git repository."""
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip()) if out.returncode == 0 else None
