"""The command line's start-up and size: `fleet --help` against `python -c pass`, and what it installs.

    .venv/bin/python bench/cli.py [--repeats 20]

Makes a fresh venv, installs ./clients/fleet-cli into it the documented way (`pip install`), then times
in turns, `repeats` times each, the venv's `python -c pass` (the baseline: the interpreter starting) and
its `fleet --help` (the console script, argparse and the command table). Size: the venv's site-packages
less what a bare venv holds (pip, setuptools), so only the CLI and its dependencies count.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def size_bytes(path: Path) -> int:
    return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file())


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        venv = Path(scratch) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        bare = size_bytes(site_packages(venv))
        started = time.perf_counter()
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(REPO / "clients" / "fleet-cli")]
        subprocess.run(pip, check=True)
        install_s = time.perf_counter() - started
        added = size_bytes(site_packages(venv)) - bare
        python, fleet = str(venv / "bin" / "python"), str(venv / "bin" / "fleet")
        timed([fleet, "--help"])  # the first start compiles nothing more (pip byte-compiled), but warms the cache
        baseline, helps = [], []
        for _ in range(args.repeats):
            baseline.append(timed([python, "-c", "pass"]))
            helps.append(timed([fleet, "--help"]))
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print(f"install: {install_s:.1f} s, adds {added / 1e6:.2f} MB to site-packages")
    print(f"python -c pass: median {statistics.median(baseline) * 1000:.0f} ms, max {max(baseline) * 1000:.0f} ms")
    print(f"fleet --help:   median {statistics.median(helps) * 1000:.0f} ms, max {max(helps) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
