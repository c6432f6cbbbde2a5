"""fleet.asgi's application with the ingest's writer replaced by the baseline that BENCH_WRITER names."""

import os

from baseline_writers import WRITERS  # noqa: E402

from fleet.asgi import application  # noqa: F401  (sets Django up)
from monitoring.ingest import batcher  # noqa: E402

batcher.write_frames = WRITERS[os.environ["BENCH_WRITER"]]
