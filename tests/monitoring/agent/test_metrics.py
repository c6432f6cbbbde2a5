from pathlib import Path

from monitoring.agent.metrics import (
    BY_KEY,
    CLOCKS_EVENT_REASONS,
    METRIC_KEYS,
    METRICS,
    THERMAL_REASONS_MASK,
    in_bounds,
    reasons_names,
)


def test_the_declared_metric_keys_are_exactly_the_protocol_fields():
    assert METRIC_KEYS == (
        "util_gpu",
        "util_mem",
        "mem_used_mib",
        "temp_c",
        "power_w",
        "sm_clock_mhz",
        "mem_clock_mhz",
        "fan_pct",
        "pcie_tx_kib_s",
        "pcie_rx_kib_s",
        "ecc_volatile",
        "clocks_event_reasons",
        "mem_temp_c",
        "util_enc",
        "util_dec",
        "mem_reserved_mib",
        "nvlink_tx_kib_s",
        "nvlink_rx_kib_s",
        "energy_mj",
        "pcie_replays",
        "xid_count",
        "xid_last",
        "retired_sbe",
        "retired_dbe",
        "retired_pending",
        "remapped_correctable",
        "remapped_uncorrectable",
        "remap_pending",
        "remap_failure",
    )


def test_every_metric_has_a_type_a_unit_help_and_sane_bounds():
    for metric in METRICS:
        assert metric.type in (int, float)
        assert metric.unit and metric.help
        assert metric.min < metric.max


def test_dcgm_names_map_where_dcgm_exporter_has_one():
    assert BY_KEY["util_gpu"].dcgm == "DCGM_FI_DEV_GPU_UTIL"
    assert BY_KEY["mem_used_mib"].dcgm == "DCGM_FI_DEV_FB_USED"
    assert BY_KEY["pcie_rx_kib_s"].dcgm == "DCGM_FI_PROF_PCIE_RX_BYTES"
    assert (BY_KEY["pcie_tx_kib_s"].dcgm_scale, BY_KEY["pcie_tx_kib_s"].dcgm_help) == (
        1024,
        "PCIe transmit throughput in bytes/s.",
    )
    assert "KiB/s" in BY_KEY["pcie_tx_kib_s"].help and "bytes" not in BY_KEY["pcie_tx_kib_s"].help
    assert BY_KEY["xid_last"].dcgm == "DCGM_FI_DEV_XID_ERRORS"
    assert BY_KEY["remap_failure"].dcgm == "DCGM_FI_DEV_ROW_REMAP_FAILURE"
    assert BY_KEY["energy_mj"].dcgm == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
    assert BY_KEY["energy_mj"].prometheus == "counter" and BY_KEY["mem_temp_c"].prometheus == "gauge"
    assert BY_KEY["clocks_event_reasons"].dcgm == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"


def test_bounds_refuse_implausible_readings():
    assert in_bounds("util_gpu", 100) and not in_bounds("util_gpu", 101)
    assert in_bounds("temp_c", -40) and not in_bounds("temp_c", 151)
    assert in_bounds("power_w", 4999.9) and not in_bounds("power_w", -1)
    assert not in_bounds("ecc_volatile", 2**64 - 1)


def test_clocks_event_reasons_bits_have_names():
    assert THERMAL_REASONS_MASK == 0x60
    assert reasons_names(0x41) == ["gpu_idle", "hw_thermal_slowdown"]
    assert CLOCKS_EVENT_REASONS["sw_power_cap"] == 0x4


def test_the_protocol_document_lists_every_metric_with_its_unit():
    doc = (Path(__file__).resolve().parents[3] / "docs" / "agent-protocol.md").read_text()

    for metric in METRICS:
        assert f"| `{metric.key}` | {metric.type.__name__} | {metric.unit} | {metric.dcgm} |" in doc
