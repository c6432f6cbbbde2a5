"""Single process: the model trains as it is, on one device, and saves the whole state."""

from training.workloads.strategies.base import Strategy


class Single(Strategy):
    name = "single"
    label = "single-process"
