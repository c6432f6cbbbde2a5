"""Where a run's command runs: one module per environment kind, found through ENVIRONMENTS (name → dotted path).

The fleet's own interpreter, a Python venv or a conda env on the node, or a container image. The launch
checks a run's environment through its kind before anything is stored; the node worker asks the same kind
for the interpreter and torchrun to start, how to wrap the command (a container), and what to record.
Adding a kind is one module and one line here; nothing else branches on its name.
"""

from __future__ import annotations

from importlib import import_module

from training.environments.base import Environment

__all__ = ["ENVIRONMENTS", "Environment", "choices", "get", "names"]

ENVIRONMENTS: dict[str, str] = {
    "fleet": "training.environments.fleet.Fleet",
    "venv": "training.environments.venv.Venv",
    "conda": "training.environments.conda.Conda",
    "image": "training.environments.container.Image",
}

_loaded: dict[str, Environment] = {}


def get(name: str) -> Environment:
    """The environment kind registered as ``name``; KeyError for an unknown one."""
    if name not in _loaded:
        module, _, cls = ENVIRONMENTS[name].rpartition(".")
        _loaded[name] = getattr(import_module(module), cls)()
    return _loaded[name]


def names() -> tuple[str, ...]:
    return tuple(ENVIRONMENTS)


def choices() -> list[tuple[str, str]]:
    """(name, label) pairs for model fields, forms and the API."""
    return [(name, get(name).label) for name in ENVIRONMENTS]
