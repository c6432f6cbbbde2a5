"""Role installs: what each kind of host installs, how big and how long, from a local wheel cache.

    .venv/bin/python bench/install.py [--repeats 3]

Builds this checkout's two distributions (gpu-fleet, gpu-fleet-agent), fills var/wheels with every
dependency once (the only step that may ask a package index), then, per repeat and in turns, makes a
fresh venv for each role and installs it with `pip install --no-index --find-links var/wheels` (pip
byte-compiles, as an admin's install does). The baseline, measured in the same run the same way, is
the single install every host needed before the roles: gpu-fleet with torch, scikit-learn, the
embedded services and nvidia-ml-py. Size is the venv's site-packages (no pip in it); packages are the
distributions installed.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.deploy.roles import (  # noqa: E402
    ROLES,
    build_distributions,
    fill_wheel_cache,
    install_fresh,
    tree_size,
)

WORK = REPO / "var" / "bench-install"
BASELINE = "everything (before)"


def requirements(wheels: dict[str, Path]) -> dict[str, list[str]]:
    per_role = {
        name: [str(wheels[role.distribution]) + (f"[{role.extras}]" if role.extras else "")]
        for name, role in ROLES.items()
    }
    per_role[BASELINE] = [f"{wheels['gpu-fleet']}[node,embedded]", "nvidia-ml-py"]
    return per_role


def measure(name: str, wanted: list[str]) -> tuple[float, int, int]:
    venv = WORK / "venv"
    seconds = install_fresh(venv, wanted)
    site = next((venv / "lib").glob("python3.*/site-packages"))
    size = tree_size(site)
    packages = len(list(site.glob("*.dist-info")))
    shutil.rmtree(venv)
    return seconds, size, packages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    wheels = build_distributions(WORK / "dist")
    built = time.perf_counter() - started
    fill_wheel_cache(wheels)
    wanted = requirements(wheels)
    times: dict[str, list[float]] = {name: [] for name in wanted}
    sizes: dict[str, tuple[int, int]] = {}
    for repeat in range(args.repeats):
        for name, reqs in wanted.items():
            seconds, size, packages = measure(name, reqs)
            times[name].append(seconds)
            sizes[name] = (size, packages)
            print(f"repeat {repeat + 1}: {name}: {seconds:.1f} s, {size / 1e6:.1f} MB, {packages} packages", flush=True)
    shutil.rmtree(WORK, ignore_errors=True)
    machine = f"{platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"\n{machine}, load average {os.getloadavg()[0]:.2f}")
    print(f"wheels of the two distributions built in {built:.1f} s\n")
    base_time = statistics.median(times[BASELINE])
    base_size = sizes[BASELINE][0]
    print("| role | packages | size | install (median) | runs | size vs before | time vs before |")
    print("|---|---|---|---|---|---|---|")
    for name in wanted:
        median = statistics.median(times[name])
        size, packages = sizes[name]
        runs = ", ".join(f"{t:.1f}" for t in times[name])
        print(
            f"| {name} | {packages} | {size / 1e6:.1f} MB | {median:.1f} s | {runs} | "
            f"{size / base_size:.3f} | {median / base_time:.3f} |"
        )


if __name__ == "__main__":
    main()
