"""The tree is the map: every folder is named in docs/development.md, every module says why it exists, and
every path the page names is still there."""

import ast
import re
from pathlib import Path

from tests.support.packages import PACKAGES

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "development.md"
# Folders every Django app has, named by convention rather than on the page.
CONVENTIONAL_FOLDERS = {"migrations", "management", "commands", "templatetags"}
# Registries: the page names the folder and its registry line; each entry below it is one variant of the same kind.
REGISTRY_FOLDERS = {
    "monitoring/alerts/rules",
    "monitoring/notify/transports",
    "training/strategies",
    "training/workloads/strategies",
}


def folders():
    for package in PACKAGES:
        for init in sorted((ROOT / package).rglob("__init__.py")):
            folder = init.parent.relative_to(ROOT)
            if CONVENTIONAL_FOLDERS & set(folder.parts):
                continue
            if any(folder.as_posix().startswith(registry + "/") for registry in REGISTRY_FOLDERS):
                continue
            yield folder


def modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts and path.name != "__init__.py":
                yield path


def named(folder: Path, text: str) -> bool:
    """The page names a folder by its path or a longer tail of it (`rules/idle/`), in backticks."""
    tails = ("/".join(folder.parts[start:]) for start in range(len(folder.parts)))
    return any(f"`{tail}/`" in text for tail in tails)


def test_every_folder_is_named_on_the_page():
    text = PAGE.read_text()
    # An app's top folder that only wires its parts together is named through them.
    wiring_only = {Path(package) for package in PACKAGES if package in ("monitoring",)}

    missing = [str(folder) for folder in folders() if folder not in wiring_only and not named(folder, text)]

    assert missing == [], f"name these folders in docs/development.md: {missing}"


def test_the_registry_folders_are_on_the_page():
    text = PAGE.read_text()

    for folder in REGISTRY_FOLDERS:
        assert f"{folder.rsplit('/', 1)[-1]}/" in text, folder


def test_every_module_says_why_it_exists():
    silent = [str(path.relative_to(ROOT)) for path in modules() if not ast.get_docstring(ast.parse(path.read_text()))]

    assert silent == [], f"give these modules a first line saying why they exist: {silent}"


def test_every_path_the_page_names_exists():
    """A path in backticks (`monitoring/storage/latest.py`, `rules/idle/`, `live/charts.CHART_METRICS`) is a file or
    folder of the tree, whole or as the tail of one, so the page cannot keep naming what moved. URLs
    (`/api/fleet/`) and placeholders (`<name>`) are not paths."""
    tops = [top for top in ROOT.iterdir() if not top.name.startswith(".") and top.name not in ("var", "build")]
    tree = {path.relative_to(ROOT).as_posix() for top in tops for path in [top, *top.rglob("*")]}
    tree |= {f"{path}/" for path in tree}
    named_paths = {path_of(found) for found in re.findall(r"`([\w./<>-]+/[\w.<>-]*)`", PAGE.read_text())}

    gone = [
        path
        for path in sorted(named_paths - {None})
        if not any(entry == path or entry.endswith("/" + path) for entry in tree)
    ]

    assert gone == [], f"docs/development.md names paths that no longer exist: {gone}"


def path_of(found: str) -> str | None:
    """The file or folder a backticked name points to: `a/b.py`, `a/b/`, or `a/b.name` (a name in a/b.py)."""
    if found.startswith("/") or "<" in found:
        return None
    folder, _, last = found.rpartition("/")
    stem, dot, suffix = last.partition(".")
    if dot and suffix not in FILE_SUFFIXES:
        return f"{folder}/{stem}.py"
    return found


FILE_SUFFIXES = {"py", "md", "html", "js", "css", "json", "yml", "yaml", "toml", "conf", "service", "txt"}
