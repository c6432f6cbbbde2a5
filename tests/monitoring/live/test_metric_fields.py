"""The API's and the websocket's metric fields and the chart list come from the agent protocol's list."""

from rest_framework import serializers

from monitoring.agent.metrics import METRIC_KEYS, METRICS
from monitoring.live.charts import CHART_METRICS
from monitoring.live.serializers import GPUSerializer, GPUStateSerializer


def test_a_gpu_state_has_one_nullable_field_per_metric():
    fields = GPUStateSerializer().fields
    for metric in METRICS:
        field = fields[metric.key]
        assert field.allow_null and not field.required, metric.key
        expected = serializers.FloatField if metric.gauge else serializers.IntegerField
        assert type(field) is expected, metric.key
    assert set(METRIC_KEYS) <= set(GPUSerializer().fields)


def test_a_missing_reading_stays_null_and_a_reading_keeps_its_value():
    state = {"uuid": "GPU-1", "node": "gpu-01", "index": 0, "util_gpu": 42, "clocks_event_reasons": 0x40}
    data = GPUStateSerializer(state).data
    assert data["util_gpu"] == 42.0 and data["clocks_event_reasons"] == 0x40
    assert all(data[key] is None for key in METRIC_KEYS if key not in state)


def test_every_gauge_can_be_charted_and_nothing_else():
    whole_numbers = {"ecc_volatile", "clocks_event_reasons", "energy_mj", "pcie_replays", "xid_count", "xid_last"}
    whole_numbers |= {"retired_sbe", "retired_dbe", "retired_pending", "remapped_correctable"}
    whole_numbers |= {"remapped_uncorrectable", "remap_pending", "remap_failure"}
    assert CHART_METRICS == tuple(key for key in METRIC_KEYS if key not in whole_numbers)
