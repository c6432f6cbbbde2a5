"""What the installed torch was built against (CUDA, cuDNN), read without importing torch.

The node worker records it for every run, user scripts included; importing torch there would cost
seconds per pool process. Built-in workloads report the same facts from the running torch (their env
event), which then wins.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path


def torch_version_file() -> Path | None:
    spec = importlib.util.find_spec("torch")  # a top-level name: finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    return path if path.is_file() else None


def built_cuda() -> str | None:
    """The CUDA version torch was built with (``torch.version.cuda``); None on a CPU build or without torch."""
    path = torch_version_file()
    if path is None:
        return None
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "cuda" and isinstance(node.value, ast.Constant):
            return node.value.value if isinstance(node.value.value, str) else None
    return None


def cudnn_wheel(packages: dict[str, str]) -> str | None:
    """The cuDNN a CUDA build of torch loads: the version of its nvidia-cudnn wheel, if one is installed."""
    for name, version in packages.items():
        if name.startswith("nvidia-cudnn-cu"):
            return version
    return None


def cudnn_text(version: int | None) -> str | None:
    """torch.backends.cudnn.version()'s number (90100) as 9.1.0; None stays None."""
    if not isinstance(version, int) or version <= 0:
        return None
    major, rest = divmod(version, 10000) if version >= 10000 else divmod(version, 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"
