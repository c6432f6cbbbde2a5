"""Single process: the workload or script as a plain program, on one GPU or the node's CPUs.

Its torch side: training/workloads/strategies/single.py.
"""

from training.strategies.base import Strategy


class Single(Strategy):
    name = "single"
    label = "Single process"
    short = "single-process"
    one_gpu = True
    single_process = True
