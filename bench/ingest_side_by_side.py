"""Two trees' ingest measured at the same time: each tree's bench/ingest.py, started together, each with its own
database.

    python bench/ingest_side_by_side.py --tree NAME=PATH=DATABASE_URL --tree NAME=PATH=DATABASE_URL \\
        [--rounds 4] [--rate 0] [--seconds 20] [--warmup 6] [--redis redis://127.0.0.1:6379]

Taken in turns, one tree after the other, each round gets whatever the machine gives at that moment: on a
shared 2-core machine the same tree's CPU per sample moved ±20 % from one round to the next, more than the
difference being measured. Side by side, both servers, their databases and load generators share the same
cores at the same moments, so a slower spell slows both; with --rate 0 (as fast as acks allow) they compete
for the machine, and samples/s shows what each gets from its share. The order the two are started in
alternates each round. Each tree's own bench/ingest.py runs (so each sends what its own agent sends), with
that tree first on PYTHONPATH and its own Redis database; each database must be migrated by its tree.

Prints each round and, per figure, the first tree's value over the second's: the median and every round.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

# Each figure's cell in bench/ingest.py's result row.
FIGURES = {"samples/s": 1, "server CPU ms/1k": 2, "DB CPU ms/1k": 3, "ack p50 ms": 6, "ack p99 ms": 7}


@dataclass(frozen=True)
class Tree:
    name: str
    path: str
    database_url: str

    @classmethod
    def parse(cls, text: str) -> "Tree":
        name, path, database_url = text.split("=", 2)
        return cls(name, os.path.abspath(path), database_url)


def command(args) -> list[str]:
    options = ["--servers", "uvicorn", "--writers", "copy", "--seconds", str(args.seconds)]
    options += ["--warmup", str(args.warmup), "--rate", str(args.rate), "--agents", str(args.agents)]
    return [sys.executable, "bench/ingest.py", *options]


def start(tree: Tree, redis_db: int, args) -> subprocess.Popen:
    env = dict(
        os.environ,
        DATABASE_URL=tree.database_url,
        REDIS_URL=f"{args.redis}/{redis_db}",
        PYTHONPATH=tree.path,
        SECRET_KEY=os.environ.get("SECRET_KEY", "bench-only"),
    )
    return subprocess.Popen(command(args), cwd=tree.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def figures(output: str) -> dict[str, float]:
    """The figures of bench/ingest.py's result row: "uvicorn / copy | 15,453 | 38.2 | 19.9 | ... | 12 ms | ..."."""
    row = [line for line in output.splitlines() if line.startswith("uvicorn")][-1]
    cells = [cell.strip() for cell in row.split("|")]
    if not cells[-1].endswith("yes"):
        raise SystemExit(f"a run lost or refused samples: {row}")
    return {name: float(cells[cell].replace(",", "").removesuffix(" ms")) for name, cell in FIGURES.items()}


def one_round(trees: list[Tree], number: int, args) -> dict[str, dict[str, float]]:
    order = trees if number % 2 == 0 else trees[::-1]
    processes = {tree.name: start(tree, 9 + trees.index(tree), args) for tree in order}
    results = {}
    for name, process in processes.items():
        output = process.communicate()[0].decode(errors="replace")
        if process.returncode:
            raise SystemExit(f"{name}: bench/ingest.py failed:\n{output[-2000:]}")
        results[name] = figures(output)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", action="append", type=Tree.parse, required=True, help="NAME=PATH=DATABASE_URL")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--rate", type=float, default=0, help="frames/s per agent (0: as fast as acks allow)")
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=6)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379")
    args = parser.parse_args()
    if len(args.tree) != 2:
        parser.error("give exactly two --tree")
    first, second = args.tree
    print(f"{first.name} against {second.name}, side by side; {args.agents} agents each, rate {args.rate or 'max'}, "
          f"{args.seconds:g} s after {args.warmup:g} s; {os.cpu_count()} cores")  # fmt: skip
    ratios: dict[str, list[float]] = {name: [] for name in FIGURES}
    for number in range(args.rounds):
        load = os.getloadavg()[0]
        results = one_round(args.tree, number, args)
        cells = []
        for name in FIGURES:
            ratio = results[first.name][name] / results[second.name][name]
            ratios[name].append(ratio)
            cells.append(f"{name} {results[first.name][name]:,.1f} / {results[second.name][name]:,.1f} = {ratio:.3f}")
        print(f"round {number + 1} ({time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load:.1f}): "
              + "; ".join(cells), flush=True)  # fmt: skip
    for name in FIGURES:
        each = ", ".join(f"{ratio:.2f}" for ratio in ratios[name])
        print(f"{name}, {first.name} / {second.name}: median {statistics.median(ratios[name]):.3f} ({each})")


if __name__ == "__main__":
    main()
