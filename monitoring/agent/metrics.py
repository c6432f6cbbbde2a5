"""The one declared list of per-sample GPU metrics.

It drives the agent's snapshot, the protocol fields, the server's database
columns and rollups, its API and chart fields and its Prometheus /metrics.
Pure stdlib: the server imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Postgres bigint is signed; counters and bitmasks are capped to fit it.
BIGINT_MAX = 2**63 - 1

# How a metric is summed up over a minute or an hour, which also says how it is stored:
GAUGE = ("min", "avg", "max")  # a level: its range and mean (a float column)
COUNTER = ("max",)  # a count that only grows until the driver reloads: its highest value (bigint)
BITMASK = ("any",)  # flags: every bit seen in the bucket, a bitwise OR (bigint)
HEALTH_EVERY_S = 30.0  # dcgm-exporter's default collection interval is 30 s too
LATEST_CODE = ("max",)  # a state or a code (0/1 flags, the last XID): the worst value seen (bigint)


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
    rollup: tuple[str, ...] = GAUGE
    # How /metrics exports it: dcgm-exporter's type, and its unit where ours differs (value × dcgm_scale).
    prometheus: str = "gauge"
    dcgm_scale: int = 1
    dcgm_help: str | None = None
    # Health counters change rarely: the agent reads them every `every_s` seconds and sends one only
    # when it changed or that long has passed; a sample without it leaves the GPU's latest value as is.
    every_s: float = 0.0
    # A memory-health counter or flag (ECC, retired pages, remapped rows): its name in a GPU's health history.
    memory_health: str = ""

    @property
    def gauge(self) -> bool:
        """A level worth charting; counters and bitmasks are whole numbers shown otherwise."""
        return self.rollup == GAUGE


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
        "PCIe transmit throughput in KiB/s.",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        0,
        512 * 1024 * 1024,
        dcgm_scale=1024,
        dcgm_help="PCIe transmit throughput in bytes/s.",
    ),
    Metric(
        "pcie_rx_kib_s",
        int,
        "KiB/s",
        "PCIe receive throughput in KiB/s.",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        0,
        512 * 1024 * 1024,
        dcgm_scale=1024,
        dcgm_help="PCIe receive throughput in bytes/s.",
    ),
    Metric(
        "ecc_volatile",
        int,
        "errors",
        "Uncorrected (double-bit) ECC errors since the last driver load.",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        0,
        BIGINT_MAX,
        COUNTER,
        prometheus="counter",
        memory_health="Uncorrected ECC errors",
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
        BITMASK,
    ),
    Metric(
        "mem_temp_c",
        int,
        "°C",
        "Memory (HBM) temperature in degrees Celsius; null where the board has no memory sensor.",
        "DCGM_FI_DEV_MEMORY_TEMP",
        -40,
        150,
    ),
    Metric(
        "util_enc",
        int,
        "%",
        "Percent of the last sample period during which the video encoder was busy.",
        "DCGM_FI_DEV_ENC_UTIL",
        0,
        100,
    ),
    Metric(
        "util_dec",
        int,
        "%",
        "Percent of the last sample period during which the video decoder was busy.",
        "DCGM_FI_DEV_DEC_UTIL",
        0,
        100,
    ),
    Metric(
        "mem_reserved_mib",
        int,
        "MiB",
        "Device memory the driver reserves for itself, in MiB (neither used nor free).",
        "DCGM_FI_DEV_FB_RESERVED",
        0,
        4 * 1024 * 1024,
        every_s=HEALTH_EVERY_S,
    ),
    Metric(
        "nvlink_tx_kib_s",
        int,
        "KiB/s",
        "NVLink transmit throughput over all links in KiB/s; null on GPUs without NVLink.",
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        0,
        BIGINT_MAX // 1024,
        dcgm_scale=1024,
        dcgm_help="NVLink transmit throughput in bytes/s: over all links, or of the one link the nvlink label names.",
    ),
    Metric(
        "nvlink_rx_kib_s",
        int,
        "KiB/s",
        "NVLink receive throughput over all links in KiB/s; null on GPUs without NVLink.",
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        0,
        BIGINT_MAX // 1024,
        dcgm_scale=1024,
        dcgm_help="NVLink receive throughput in bytes/s: over all links, or of the one link the nvlink label names.",
    ),
    Metric(
        "energy_mj",
        int,
        "mJ",
        "Energy the board used since the driver was last loaded, in millijoules.",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        0,
        BIGINT_MAX,
        COUNTER,
        prometheus="counter",
        every_s=HEALTH_EVERY_S,
    ),
    Metric(
        "pcie_replays",
        int,
        "retries",
        "PCIe packets the link had to send again (a rising count points at a bad riser, slot or cable).",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        0,
        BIGINT_MAX,
        COUNTER,
        prometheus="counter",
        every_s=HEALTH_EVERY_S,
    ),
    Metric(
        "xid_count",
        int,
        "events",
        "XID errors (driver-reported GPU faults) the agent has seen on this GPU since it started.",
        "fleet_gpu_xid_errors_total",
        0,
        BIGINT_MAX,
        COUNTER,
        prometheus="counter",
        every_s=HEALTH_EVERY_S,
    ),
    Metric(
        "xid_last",
        int,
        "code",
        "The code of the last XID error seen on this GPU (0 until one is seen).",
        "DCGM_FI_DEV_XID_ERRORS",
        0,
        BIGINT_MAX,
        LATEST_CODE,
        every_s=HEALTH_EVERY_S,
    ),
    Metric(
        "retired_sbe",
        int,
        "pages",
        "Memory pages retired after repeated single-bit ECC errors (GPUs before Ampere).",
        "DCGM_FI_DEV_RETIRED_SBE",
        0,
        BIGINT_MAX,
        COUNTER,
        prometheus="counter",
        every_s=HEALTH_EVERY_S,
        memory_health="Pages retired (single-bit)",
    ),
    Metric(
        "retired_dbe",
        int,
        "pages",
        "Memory pages retired after a double-bit ECC error (GPUs before Ampere).",
        "DCGM_FI_DEV_RETIRED_DBE",
        0,
        BIGINT_MAX,
        COUNTER,
        prometheus="counter",
        every_s=HEALTH_EVERY_S,
        memory_health="Pages retired (double-bit)",
    ),
    Metric(
        "retired_pending",
        int,
        "flag",
        "1 while a page retirement waits for the next driver reload or reset, else 0.",
        "DCGM_FI_DEV_RETIRED_PENDING",
        0,
        1,
        LATEST_CODE,
        every_s=HEALTH_EVERY_S,
        memory_health="Page retirement pending",
    ),
    Metric(
        "remapped_correctable",
        int,
        "rows",
        "Memory rows remapped after correctable errors (Ampere and later).",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        0,
        BIGINT_MAX,
        COUNTER,
        prometheus="counter",
        every_s=HEALTH_EVERY_S,
        memory_health="Rows remapped (correctable)",
    ),
    Metric(
        "remapped_uncorrectable",
        int,
        "rows",
        "Memory rows remapped after uncorrectable errors (Ampere and later).",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        0,
        BIGINT_MAX,
        COUNTER,
        prometheus="counter",
        every_s=HEALTH_EVERY_S,
        memory_health="Rows remapped (uncorrectable)",
    ),
    Metric(
        "remap_pending",
        int,
        "flag",
        "1 while a row remap waits for the next GPU reset, else 0.",
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        0,
        1,
        LATEST_CODE,
        every_s=HEALTH_EVERY_S,
        memory_health="Row remap pending",
    ),
    Metric(
        "remap_failure",
        int,
        "flag",
        "1 once a row remap has failed (the GPU should be replaced), else 0.",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        0,
        1,
        LATEST_CODE,
        every_s=HEALTH_EVERY_S,
        memory_health="Row remap failure",
    ),
)

METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS)
BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}
SLOW_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS if m.every_s)


@dataclass(frozen=True)
class LinkMetric:
    """One field of each entry of a sample's "nvlink" list: a per-link share of the total metric it names."""

    key: str
    total: str  # the METRICS key of the same figure over all links (its unit, range and dcgm-exporter name)
    help: str

    @property
    def unit(self) -> str:
        return BY_KEY[self.total].unit


# NVLink throughput per link: a sample's "nvlink" is a list with one entry per link of the GPU (the entry's
# position is the link's number), or null on a GPU without NVLink. A value is null while its link is inactive
# or NVML cannot read it. Per link is the latest state only: history keeps the totals above. The agent sends
# it every NVLINK_EVERY_S, like the health counters (18 links in every sample made the server's work per
# sample far dearer: docs/benchmarks.md#the-wider-sample-dcgm-depth-fields-issue-18); a sample without the key
# leaves the GPU's latest per-link figures as they are, and those older than NVLINK_STALE_S are not shown.
NVLINK = "nvlink"
NVLINK_MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS; an A100 has 12 links, an H100 18
NVLINK_EVERY_S = HEALTH_EVERY_S
NVLINK_STALE_S = 3 * NVLINK_EVERY_S
LINK_METRICS: tuple[LinkMetric, ...] = (
    LinkMetric("tx_kib_s", "nvlink_tx_kib_s", "Transmit throughput of this link in KiB/s; null while it is inactive."),
    LinkMetric("rx_kib_s", "nvlink_rx_kib_s", "Receive throughput of this link in KiB/s; null while it is inactive."),
)
LINK_KEYS: tuple[str, ...] = tuple(m.key for m in LINK_METRICS)

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


def current_links(kept: dict | None, latest_ts: float | None) -> list[dict] | None:
    """A GPU's per-link figures as kept by the server ({"ts", "links"}), or None once they are stale."""
    if not kept or latest_ts is None or kept["ts"] < latest_ts - NVLINK_STALE_S:
        return None
    return kept["links"]


def reasons_names(mask: int) -> list[str]:
    """The names of the clocks-event bits set in mask, for pages and alerts."""
    return [name for name, bit in CLOCKS_EVENT_REASONS.items() if mask & bit]
