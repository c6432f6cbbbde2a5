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
