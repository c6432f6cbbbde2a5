"""The fleet's own interpreter: the node worker's Python and its packages; the built-in workloads run here."""

from __future__ import annotations

from django.conf import settings

from training.environments.base import Environment


class Fleet(Environment):
    name = "fleet"
    label = "the fleet's Python"

    def python(self, ref: str) -> str:
        # A node may give runs another interpreter than its own (RUN_PYTHON).
        return settings.RUN_PYTHON
