"""A Python venv on the node, by path inside RUN_ENV_DIRS: its own python, torchrun and packages (pip freeze)."""

from __future__ import annotations

from training.environments.on_disk import OnDisk, output


class Venv(OnDisk):
    name = "venv"
    label = "Python venv"
    marker = "pyvenv.cfg"
    what = "a venv"

    def prefix_name(self) -> str:
        return "VIRTUAL_ENV"

    def packages(self, ref: str) -> dict:
        frozen = output([self.python(ref), "-m", "pip", "freeze", "--all", "--disable-pip-version-check"])
        return {"packages": frozen.splitlines() if frozen is not None else None, "packages_by": "pip freeze"}
