"""docs/development.md's map names every module of the product, so a newcomer finds each one there."""

from pathlib import Path

from tests.support.packages import PACKAGES

ROOT = Path(__file__).resolve().parents[1]
# What every Django app or package has, named by convention rather than in the map.
CONVENTIONAL = {"__init__.py", "__main__.py", "admin.py", "apps.py"}
# Registries: the map names the folder and its registry; each entry is one module of the same kind.
REGISTRY_FOLDERS = {
    "training/strategies",
    "training/workloads/strategies",
    "training/workloads",
    "monitoring/notify/transports",
    "monitoring/alerts/rules",
    "fleet/management/commands",
    "inventory/management/commands",
    "accounts/management/commands",
}


def modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" in relative.parts or path.name in CONVENTIONAL:
                continue
            if relative.parent.as_posix() in REGISTRY_FOLDERS:
                continue
            yield relative


def named(path: Path, text: str) -> bool:
    """The map names a module by its file name or a longer tail of its path (`models/inventory.py`)."""
    tails = ("/".join(path.parts[start:]) for start in range(len(path.parts)))
    return any(f"`{tail}`" in text for tail in tails)


def test_the_code_map_names_every_module():
    text = (ROOT / "docs" / "development.md").read_text()

    missing = [str(path) for path in modules() if not named(path, text)]

    assert missing == [], f"add these to docs/development.md's map: {missing}"


def test_the_registry_folders_it_leaves_to_their_registry_are_in_the_map():
    text = (ROOT / "docs" / "development.md").read_text()

    for folder in REGISTRY_FOLDERS:
        assert f"{folder.rsplit('/', 1)[-1]}/" in text, folder
