"""The product's web server with a baseline writer in the ingest's place (bench/baseline_writers.py).

    BENCH_WRITER=insert|per-sample python bench/baseline_server.py [uvicorn's options, as fleet/serving.py takes]

Each serving process imports baseline_asgi, which puts the writer in before the app handles a frame.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from fleet import serving  # noqa: E402

if __name__ == "__main__":
    serving.APPLICATION = "baseline_asgi:application"
    serving.serve(sys.argv[1:])
