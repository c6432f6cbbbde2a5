"""The telemetry tables' metric columns, read from the agent protocol's one list (monitoring/agent/metrics.py).

A gauge is a float column rolled up as min/avg/max; a counter, a flag or a bitmask is a bigint rolled up
as its max or its bitwise OR. The models build their metric fields here, so a new metric is one line in
the list plus a migration.
"""

from django.db import models

from monitoring.agent.metrics import METRICS, Metric


def sql_type(metric: Metric) -> str:
    """The PostgreSQL type of a metric's sample column."""
    return "float8" if metric.gauge else "int8"


def sample_fields(**options) -> dict[str, models.Field]:
    """One nullable model field per metric (NULL: the GPU could not report it), in protocol order."""
    return {metric.key: _field(metric.gauge, **options) for metric in METRICS}


def rollup_fields() -> dict[str, models.Field]:
    """The rollup tables' fields: a float per gauge aggregate, a bigint per counter max or bitmask OR."""
    return {f"{metric.key}_{aggregate}": _field(metric.gauge) for metric in METRICS for aggregate in metric.rollup}


def _field(gauge: bool, **options) -> models.Field:
    return models.FloatField(null=True, **options) if gauge else models.BigIntegerField(null=True, **options)


# (column, type) of a raw sample's metrics, in protocol order.
SAMPLE_COLUMNS: list[tuple[str, str]] = [(metric.key, sql_type(metric)) for metric in METRICS]
# The rollup tables' metric columns: <key>_<aggregate>, in protocol order.
ROLLUP_COLUMNS: list[str] = [f"{metric.key}_{aggregate}" for metric in METRICS for aggregate in metric.rollup]
