"""The one declared list of per-sample GPU metrics.

It drives the agent's snapshot, the protocol fields, the server's database
columns and its Prometheus /metrics. Pure stdlib: the server imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Postgres bigint is signed; counters and bitmasks are capped to fit it.
BIGINT_MAX = 2**63 - 1


@dataclass(frozen=True)
class Metric:
    """One per-sample field: its JSON key, type, unit, meaning and plausible range."""

    key: str
    type: type
    unit: str
    help: str
    dcgm: str | None
    min: float
    max: float


METRICS: tuple[Metric, ...] = (
    Metric(
        "util_gpu",
        int,
        "%",
        "Percent of the last sample period during which a kernel ran on the GPU.",
        "DCGM_FI_DEV_GPU_UTIL",
        0,
        100,
    ),
    Metric(
        "util_mem",
        int,
        "%",
        "Percent of the last sample period during which device memory was read or written.",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        0,
        100,
    ),
    Metric(
        "mem_used_mib",
        int,
        "MiB",
        "Device (framebuffer) memory in use, in MiB.",
        "DCGM_FI_DEV_FB_USED",
        0,
        4 * 1024 * 1024,
    ),
    Metric(
        "temp_c",
        int,
        "°C",
        "GPU core temperature in degrees Celsius.",
        "DCGM_FI_DEV_GPU_TEMP",
        -40,
        150,
    ),
    Metric(
        "power_w",
        float,
        "W",
        "Power draw of the board in watts.",
        "DCGM_FI_DEV_POWER_USAGE",
        0,
        5000,
    ),
    Metric(
        "sm_clock_mhz",
        int,
        "MHz",
        "Current SM (streaming multiprocessor) clock in MHz.",
        "DCGM_FI_DEV_SM_CLOCK",
        0,
        10000,
    ),
    Metric(
        "mem_clock_mhz",
        int,
        "MHz",
        "Current memory clock in MHz.",
        "DCGM_FI_DEV_MEM_CLOCK",
        0,
        40000,
    ),
    Metric(
        "fan_pct",
        int,
        "%",
        "Fan speed as a percent of its maximum; null on boards without a fan (SXM).",
        "DCGM_FI_DEV_FAN_SPEED",
        0,
        100,
    ),
    Metric(
        "pcie_tx_kib_s",
        int,
        "KiB/s",
        "PCIe transmit throughput in KiB/s (dcgm-exporter reports bytes/s: divide it by 1024).",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        0,
        512 * 1024 * 1024,
    ),
    Metric(
        "pcie_rx_kib_s",
        int,
        "KiB/s",
        "PCIe receive throughput in KiB/s (dcgm-exporter reports bytes/s: divide it by 1024).",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        0,
        512 * 1024 * 1024,
    ),
    Metric(
        "ecc_volatile",
        int,
        "errors",
        "Uncorrected (double-bit) ECC errors since the last driver load.",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        0,
        BIGINT_MAX,
    ),
    Metric(
        "clocks_event_reasons",
        int,
        "bitmask",
        "Why clocks are below their maximum, as NVML's clocks-event bitmask "
        "(0x20 software thermal, 0x40 hardware thermal, 0x4 power cap, 0x1 idle).",
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        0,
        BIGINT_MAX,
    ),
)

METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS)
BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}

# Bits of clocks_event_reasons, as NVML defines them (nvmlClocksEventReason*).
CLOCKS_EVENT_REASONS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}
THERMAL_REASONS_MASK = CLOCKS_EVENT_REASONS["sw_thermal_slowdown"] | CLOCKS_EVENT_REASONS["hw_thermal_slowdown"]


def in_bounds(key: str, value: float) -> bool:
    """Whether value is plausible for metric key (the server rejects the rest)."""
    metric = BY_KEY[key]
    return metric.min <= value <= metric.max


def reasons_names(mask: int) -> list[str]:
    """The names of the clocks-event bits set in mask, for pages and alerts."""
    return [name for name, bit in CLOCKS_EVENT_REASONS.items() if mask & bit]
