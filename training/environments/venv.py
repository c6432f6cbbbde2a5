"""A Python venv on the node, by path inside RUN_ENV_DIRS: its own python, torchrun and packages (pip freeze).

Its packages are read from its ``site-packages/*.dist-info`` in the form ``pip freeze --all`` prints them
(``name==version``, ``name @ url`` for a wheel or directory installed from a URL, PEP 610), so recording them
starts no pip: that would cost a Python start and pip's import between the run's start and its first line.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

from training.environments.on_disk import OnDisk


class Venv(OnDisk):
    name = "venv"
    label = "Python venv"
    marker = "pyvenv.cfg"
    prefix_variable = "VIRTUAL_ENV"  # set to the env's path, as its own activation does
    what = "a venv"

    def packages(self, ref: str) -> dict:
        paths = [str(path) for path in sorted(Path(ref).glob("lib/python*/site-packages"))]
        found = {}
        for dist in metadata.distributions(path=paths):
            name = dist.metadata.get("Name")
            if name and name.lower() not in found:
                found[name.lower()] = frozen(dist, name)
        return {"packages": [found[key] for key in sorted(found)], "packages_by": "pip freeze"}


def frozen(dist: metadata.Distribution, name: str) -> str:
    """One distribution's ``pip freeze`` line."""
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        direct = None
    if not isinstance(direct, dict) or not isinstance(direct.get("url"), str):
        return f"{name}=={dist.version}"
    url = direct["url"]
    if (direct.get("dir_info") or {}).get("editable"):
        return f"-e {url}"
    vcs, archive = direct.get("vcs_info"), direct.get("archive_info")
    if isinstance(vcs, dict) and vcs.get("vcs") and vcs.get("commit_id"):
        url = f"{vcs['vcs']}+{url}@{vcs['commit_id']}"
    fragments = []
    if isinstance(archive, dict) and (digest := archive_hash(archive)):
        fragments.append(digest)
    if isinstance(direct.get("subdirectory"), str):
        fragments.append("subdirectory=" + direct["subdirectory"])
    return f"{name} @ {url}" + ("#" + "&".join(fragments) if fragments else "")


def archive_hash(archive: dict) -> str | None:
    """The archive's hash as pip writes it after the URL (``sha256=…``)."""
    if isinstance(archive.get("hash"), str):
        return archive["hash"]
    hashes = archive.get("hashes")
    if isinstance(hashes, dict) and hashes:
        name = "sha256" if "sha256" in hashes else sorted(hashes)[0]
        return f"{name}={hashes[name]}"
    return None
