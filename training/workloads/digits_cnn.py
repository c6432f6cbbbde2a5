"""Small CNN on scikit-learn's 8x8 handwritten digits.

The held-out split is fixed by --split-seed (stratified, 20 % of each class),
so runs with different --seed values are scored on the same images.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import TensorDataset

from training.workloads import WORKLOADS, loop

NAME = "digits_cnn"
DEFAULTS = WORKLOADS[NAME].defaults
TINY = {"epochs": 8, "batch_size": 32, "lr": 0.003, "optimizer": "adam"}
HELD_OUT_FRACTION = 0.2
DROPOUT = 0.25


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split-seed", type=int, default=0, help="seed of the fixed train/held-out split")


def digits_csv() -> Path:
    """The digits file scikit-learn ships, found without importing scikit-learn.

    Importing it costs more than a second per process, which every torchrun rank
    and Hogwild worker would pay before its first step.
    """
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("scikit-learn is not installed; the digits workload reads the data it ships")
    return Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """Images scaled to [0, 1] as (n, 1, 8, 8) float32, and labels 0-9."""
    table = np.loadtxt(digits_csv(), delimiter=",", dtype=np.float32)
    images = (table[:, :-1] / 16.0).reshape(-1, 1, 8, 8)
    return images, table[:, -1].astype(np.int64)


def split(labels: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stratified (train, held-out) indices: the same for the same seed."""
    rng = np.random.default_rng(seed)
    train, held_out = [], []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        cut = round(len(members) * HELD_OUT_FRACTION)
        held_out.append(members[:cut])
        train.append(members[cut:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(held_out))


def load_data(args: argparse.Namespace) -> tuple[TensorDataset, TensorDataset]:
    images, labels = load_digits()
    train, held_out = split(labels, args.split_seed)
    return (
        TensorDataset(torch.from_numpy(images[train]), torch.from_numpy(labels[train])),
        TensorDataset(torch.from_numpy(images[held_out]), torch.from_numpy(labels[held_out])),
    )


def build_model(args: argparse.Namespace) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 64 x 4 x 4
        nn.Flatten(),
        # Dropout lifts held-out accuracy over three seeds (docs/benchmarks.md#training).
        nn.Dropout(DROPOUT),
        nn.Linear(64 * 4 * 4, 64),
        nn.ReLU(),
        nn.Dropout(DROPOUT),
        nn.Linear(64, 10),
    )


def main(argv: list[str] | None = None) -> int:
    return loop.run(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
