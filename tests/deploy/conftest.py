"""Role installs shared by the deploy tests: each role is installed once, on first use."""

import os
import shutil

import psutil
import pytest

from tests.deploy.roles import BASE_DIR, RoleInstalls

ROLES_DIR = BASE_DIR / "var" / "roles"


def remove_stale_installs() -> None:
    """Venvs of test sessions that died without cleaning up (each folder is named after its session's pid)."""
    if not ROLES_DIR.exists():
        return
    for folder in ROLES_DIR.iterdir():
        if folder.name.isdigit() and not psutil.pid_exists(int(folder.name)):
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="package")
def roles():
    """The role installs, shared by the deploy tests and removed after the last of them."""
    remove_stale_installs()
    root = ROLES_DIR / str(os.getpid())
    installs = RoleInstalls(root)
    yield installs
    shutil.rmtree(root, ignore_errors=True)  # a node venv is 1.4 GB
