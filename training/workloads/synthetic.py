"""MLP on generated data, for measuring training throughput.

Inputs are Gaussian; labels come from a fixed random "teacher" network, so the
task is learnable and held-out accuracy means something. Everything is made
from --data-seed in memory: nothing is read or downloaded.
"""

from __future__ import annotations

import argparse
import sys

import torch
from torch import nn
from torch.utils.data import TensorDataset

from training.workloads import SYNTHETIC_TRAIN_SIZE, WORKLOADS, loop

NAME = "synthetic"
DEFAULTS = WORKLOADS[NAME].defaults
TINY = {"epochs": 2, "batch_size": 64, "lr": 0.002, "optimizer": "adam", "samples": 2048, "hidden": 64}
HELD_OUT = 1024
CLASSES = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--samples", type=int, default=SYNTHETIC_TRAIN_SIZE, help="training samples")
    parser.add_argument("--features", type=int, default=32, help="input features")
    parser.add_argument("--hidden", type=int, default=256, help="width of the two hidden layers")
    parser.add_argument("--data-seed", type=int, default=0, help="seed of the generated data")


def load_data(args: argparse.Namespace) -> tuple[TensorDataset, TensorDataset]:
    generator = torch.Generator().manual_seed(args.data_seed)
    inputs = torch.randn(args.samples + HELD_OUT, args.features, generator=generator)
    teacher_in = torch.randn(args.features, 64, generator=generator)
    teacher_out = torch.randn(64, CLASSES, generator=generator)
    labels = (torch.tanh(inputs @ teacher_in) @ teacher_out).argmax(dim=1)
    train, held_out = slice(0, args.samples), slice(args.samples, None)
    return TensorDataset(inputs[train], labels[train]), TensorDataset(inputs[held_out], labels[held_out])


def build_model(args: argparse.Namespace) -> nn.Module:
    return nn.Sequential(
        nn.Linear(args.features, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, CLASSES),
    )


def main(argv: list[str] | None = None) -> int:
    return loop.run(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
