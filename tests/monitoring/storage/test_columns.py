"""The storage's metric columns come from the agent protocol's list and agree with the models."""

from django.db import connection

from monitoring.agent.metrics import BITMASK, COUNTER, GAUGE, METRIC_KEYS, METRICS
from monitoring.storage.columns import ROLLUP_COLUMNS, SAMPLE_COLUMNS
from monitoring.storage.models import GPUHour, GPUMinute, GPUSample, GPUState
from monitoring.storage.series import rollup_columns

POSTGRES_TYPE = {"float8": "double precision", "int8": "bigint"}


def test_every_metric_has_a_sample_column_of_the_type_its_kind_needs():
    assert [name for name, _ in SAMPLE_COLUMNS] == list(METRIC_KEYS)
    for name, kind in SAMPLE_COLUMNS:
        assert GPUSample._meta.get_field(name).db_type(connection) == POSTGRES_TYPE[kind], name
        assert GPUState._meta.get_field(name).db_type(connection) == POSTGRES_TYPE[kind], name


def test_the_rollup_columns_are_the_models_and_follow_each_metrics_kind():
    for model in (GPUMinute, GPUHour):
        declared = [f.column for f in model._meta.concrete_fields if f.column.rsplit("_", 1)[0] in METRIC_KEYS]
        assert declared == ROLLUP_COLUMNS, model.__name__
    by_kind = {metric.key: metric.rollup for metric in METRICS}
    assert by_kind["util_gpu"] == GAUGE and by_kind["ecc_volatile"] == COUNTER
    assert by_kind["clocks_event_reasons"] == BITMASK
    assert "ecc_volatile_max" in ROLLUP_COLUMNS and "clocks_event_reasons_any" in ROLLUP_COLUMNS


def test_a_series_reads_the_rollup_columns_of_the_metrics_it_asks_for():
    assert rollup_columns(["temp_c", "clocks_event_reasons"]) == [
        "temp_c_min",
        "temp_c_avg",
        "temp_c_max",
        "clocks_event_reasons_any",
    ]
