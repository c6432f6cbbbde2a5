"""The agent's one declared list of metric keys drives the storage columns."""

from django.db import models

from monitoring.agent.metrics import METRIC_KEYS, METRICS
from monitoring.storage.models import GPUHour, GPUMinute, GPUSample, GPUState
from monitoring.storage.rollups import ROLLUP_COLUMNS

METRIC_FIELD_TYPES = (models.FloatField, models.BigIntegerField)


def metric_columns(model) -> list[str]:
    return [f.name for f in model._meta.concrete_fields if isinstance(f, METRIC_FIELD_TYPES) and not f.primary_key]


def test_the_raw_sample_columns_are_the_declared_metric_keys():
    assert metric_columns(GPUSample) == list(METRIC_KEYS)


def test_the_latest_state_of_a_gpu_has_every_declared_metric():
    assert set(METRIC_KEYS) <= set(metric_columns(GPUState))


def test_every_metric_is_rolled_up_in_both_rollups():
    for model in (GPUMinute, GPUHour):
        keys = {column.rsplit("_", 1)[0] for column in metric_columns(model) if column != "samples"}
        assert keys == set(METRIC_KEYS), model.__name__
    assert {column.rsplit("_", 1)[0] for column in ROLLUP_COLUMNS} == set(METRIC_KEYS)


def test_counters_are_whole_number_columns_and_the_rest_are_floats():
    for metric in METRICS:
        field = GPUSample._meta.get_field(metric.key)
        counter = metric.rollup != ("min", "avg", "max")
        expected = models.BigIntegerField if counter else models.FloatField
        assert type(field) is expected, metric.key
