"""The health history's memory counters come from the one metric list, each readable from the minute rollups."""

from monitoring.agent.metrics import BY_KEY, METRICS
from monitoring.health.history import MEMORY_COUNTERS, MEMORY_LABELS


def test_the_memory_counters_are_the_metrics_that_name_themselves_memory_health_in_the_lists_order():
    assert MEMORY_COUNTERS == tuple(metric.key for metric in METRICS if metric.memory_health)
    assert MEMORY_COUNTERS[:1] == ("ecc_volatile",) and "remap_failure" in MEMORY_COUNTERS
    assert MEMORY_LABELS["remapped_uncorrectable"] == "Rows remapped (uncorrectable)"


def test_each_memory_counter_is_a_whole_number_whose_minute_rollup_keeps_its_highest_value():
    # history.py reads <key>_max from the minute rollups: a gauge or bitmask there would have no such column.
    for key in MEMORY_COUNTERS:
        assert BY_KEY[key].type is int and BY_KEY[key].rollup == ("max",), key
