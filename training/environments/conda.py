"""A conda env on the node, by path inside RUN_ENV_DIRS: its own python, torchrun and packages.

Its packages are read from its ``conda-meta/`` records, in the form ``conda list --export`` prints
(name=version=build), so recording them needs no conda on the node worker's PATH.
"""

from __future__ import annotations

import json
from pathlib import Path

from training.environments.on_disk import OnDisk


class Conda(OnDisk):
    name = "conda"
    label = "conda env"
    marker = "conda-meta"
    prefix_variable = "CONDA_PREFIX"  # set to the env's path, as its own activation does
    what = "a conda env"

    def packages(self, ref: str) -> dict:
        lines = []
        for record in sorted(Path(ref, self.marker).glob("*.json")):
            try:
                meta = json.loads(record.read_text())
                lines.append(f"{meta['name']}={meta['version']}={meta['build']}")
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return {"packages": sorted(lines), "packages_by": "conda list --export"}
