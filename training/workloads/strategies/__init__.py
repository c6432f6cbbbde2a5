"""Strategies inside a training process: one module per strategy, found through STRATEGIES (name → dotted path).

The same names as the server's registry (training/strategies/), whose side decides how a run's
processes start; this side owns what each process does with its model: the wrap, and the checkpoint's
save and load. A new strategy is a module here and one line below, beside its server module and line.
"""

from __future__ import annotations

from importlib import import_module

from training.workloads.strategies.base import Strategy

__all__ = ["STRATEGIES", "Strategy", "get", "label", "under_torchrun"]

STRATEGIES: dict[str, str] = {
    "single": "training.workloads.strategies.single.Single",
    "ddp": "training.workloads.strategies.ddp.DDP",
    "hogwild": "training.workloads.strategies.hogwild.Hogwild",
    "fsdp": "training.workloads.strategies.fsdp.FSDP",
}

_loaded: dict[str, Strategy] = {}


def get(name: str) -> Strategy:
    """The strategy registered as ``name``; KeyError for an unknown one."""
    if name not in _loaded:
        module, _, cls = STRATEGIES[name].rpartition(".")
        _loaded[name] = getattr(import_module(module), cls)()
    return _loaded[name]


def under_torchrun() -> tuple[str, ...]:
    """The strategies whose processes are torchrun's ranks: the workloads' ``--strategy`` choices."""
    return tuple(name for name in STRATEGIES if get(name).torchrun)


def label(name: str) -> str:
    """How messages name a strategy ("Hogwild"); an unknown name as it is."""
    return get(name).label if name in STRATEGIES else name
