"""The metrics of every training step as CSV, one of a run's artifacts (pure Python: no torch).

A step's row is written once the next step (or the epoch's end) is known, so the last step of each
epoch carries that epoch's held-out accuracy and loss; other rows leave them empty.
"""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path

COLUMNS = ("step", "epoch", "loss", "samples_per_s", "held_out_accuracy", "held_out_loss", "time")


def output_file(name: str) -> str | None:
    """A file in the run's own directory (FLEET_OUTPUT_DIR, set by the node worker); None outside the fleet."""
    directory = os.environ.get("FLEET_OUTPUT_DIR")
    return str(Path(directory) / name) if directory else None


class StepCSV:
    """Writes one row per step to ``path``."""

    def __init__(self, path: str) -> None:
        self.file = open(path, "w", newline="")  # noqa: SIM115 - open for the whole run, closed by close()
        self.writer = csv.writer(self.file)
        self.writer.writerow(COLUMNS)
        self.pending: list | None = None

    def step(self, step: int, epoch: int, loss: float | None, samples_per_s: float | None) -> None:
        self._write_pending()
        self.pending = [step, epoch, _number(loss), _number(samples_per_s), "", "", f"{time.time():.3f}"]

    def epoch_end(self, accuracy: float, test_loss: float) -> None:
        if self.pending is not None:
            self.pending[4:6] = [_number(accuracy), _number(test_loss)]
        self._write_pending()
        self.file.flush()  # a cancelled run keeps every finished epoch

    def close(self) -> None:
        self._write_pending()
        self.file.close()

    def _write_pending(self) -> None:
        if self.pending is not None:
            self.writer.writerow(self.pending)
            self.pending = None


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"
