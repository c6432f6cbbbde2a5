"""Training strategies: one module per strategy, found through STRATEGIES (name → dotted path).

Adding one is a module with a small Strategy subclass and one line here; the run form, the API,
parameter checks, launches and node commands ask the strategy instead of branching on its name.
Pure Python: importing this pulls in neither torch nor Django.
"""

from __future__ import annotations

from importlib import import_module

from training.strategies.base import NodeShare, Strategy

__all__ = ["STRATEGIES", "NodeShare", "Strategy", "choices", "get", "hints", "names"]

STRATEGIES: dict[str, str] = {
    "single": "training.strategies.single.Single",
    "ddp": "training.strategies.ddp.DDP",
    "hogwild": "training.strategies.hogwild.Hogwild",
    "fsdp": "training.strategies.fsdp.FSDP",
    "launcher": "training.strategies.launcher.Launcher",
}

_loaded: dict[str, Strategy] = {}


def get(name: str) -> Strategy:
    """The strategy registered as ``name``; KeyError for an unknown one."""
    if name not in _loaded:
        module, _, cls = STRATEGIES[name].rpartition(".")
        _loaded[name] = getattr(import_module(module), cls)()
    return _loaded[name]


def names() -> tuple[str, ...]:
    return tuple(STRATEGIES)


def hints() -> str:
    """The launch form's one line per strategy that says when to pick it."""
    return " ".join(f"{get(name).short}: {get(name).hint}" for name in STRATEGIES if get(name).hint)


def choices() -> list[tuple[str, str]]:
    """(name, label) pairs for model fields, forms and the API."""
    return [(name, get(name).label) for name in STRATEGIES]
