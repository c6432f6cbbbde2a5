"""The process tests' fixtures: the alert tests' fixed cast and real node worker."""

from tests.support.monitoring import *  # noqa: F403
