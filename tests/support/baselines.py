"""The ingest's writers by name: the product's COPY writer and the benchmarks' baselines (bench/baseline_writers.py).

The baselines are compared with the product in docs/benchmarks.md, so they must store the same rows; bench/ is
not a package, so its module is loaded by path.
"""

import importlib.util
from pathlib import Path

from monitoring.ingest.writer import write_frames

BASELINES = Path(__file__).resolve().parents[2] / "bench" / "baseline_writers.py"


def baseline_writers() -> dict:
    spec = importlib.util.spec_from_file_location("baseline_writers", BASELINES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WRITERS


WRITERS = {"copy": write_frames, **baseline_writers()}
