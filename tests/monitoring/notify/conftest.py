"""The alert, notification and cost tests' fixtures: a fixed clock, one GPU with a node, a real worker."""

from tests.support.monitoring import *  # noqa: F403
