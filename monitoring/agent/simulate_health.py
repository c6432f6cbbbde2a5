"""The simulated GPUs' health counters: what DCGM-depth monitoring shows on a real fleet, made up but plausible.

Like the rest of the simulation, a pure function of (seed, GPU index, time). On every node one GPU
logs a rare XID error (every half hour, an application fault code), and on one node in four one GPU
has remapped memory rows with a remap pending, so the demo and the tests have something to show.
Values a model cannot give (memory temperature on GDDR boards, NVLink on PCIe boards, page
retirement on Ampere and later) are null, as NVML would report them. An NVLink board reports its
links one by one too (12 on an A100, 18 on an H100), their sum being the total.
"""

from __future__ import annotations

from .metrics import LINK_METRICS, NVLINK

XID_FIRST_S = 300
XID_PERIOD_S = 1800
XID_CODES = (13, 31, 43)  # graphics engine exception, memory page fault, GPU stopped: what user code causes
BOOTED_BEFORE_START_S = 86400  # the driver has been up a day when the agent starts: energy has a history
HBM_MODELS = ("A100", "H100")
NVLINK_LINKS = {"A100-SXM": 12, "H100": 18}  # links per GPU of the simulated models that have NVLink
CONSUMER_MODELS = ("GeForce",)


def health(model, seed: int, index: int, elapsed: float, reading: dict) -> dict:
    """The health fields of one simulated reading; reading holds its util_gpu, temp_c and power_w."""
    hbm = any(name in model.name for name in HBM_MODELS)
    links = nvlink_links(model)
    consumer = any(name in model.name for name in CONSUMER_MODELS)
    busy = reading["util_gpu"] >= 50
    xid_count = xid_events(seed, index, elapsed)
    remaps = has_remapped_rows(seed, index)
    return {
        "mem_temp_c": reading["temp_c"] + 6 if hbm else None,
        "util_enc": 0,
        "util_dec": 0,
        "mem_reserved_mib": model.memory_total_mib * 13 // 2000,  # about 0.65 %, as the driver keeps
        # Monotonic: the board's mean power so far, at most its limit, over the driver's uptime.
        "energy_mj": int(1000 * model.idle_power_w * (BOOTED_BEFORE_START_S + elapsed))
        + int(1000 * (model.power_limit_w - model.idle_power_w) * 0.5 * elapsed),
        "pcie_replays": 0,
        "xid_count": xid_count,
        "xid_last": XID_CODES[(xid_count - 1) % len(XID_CODES)] if xid_count else 0,
        "retired_sbe": None,
        "retired_dbe": None,
        "retired_pending": None,
        "remapped_correctable": None if consumer else (3 if remaps else 0),
        "remapped_uncorrectable": None if consumer else (1 if remaps else 0),
        "remap_pending": None if consumer else int(remaps),
        "remap_failure": None if consumer else 0,
        **nvlink(links, busy),
    }


def nvlink_links(model) -> int:
    return next((count for name, count in NVLINK_LINKS.items() if name in model.name), 0)


def nvlink(links: int, busy: bool) -> dict:
    """NVLink totals and each link's share of them (an even split, the remainder on link 0)."""
    totals = {"nvlink_tx_kib_s": 18_000_000 if busy else 2_000, "nvlink_rx_kib_s": 17_500_000 if busy else 2_000}
    if not links:
        return {**dict.fromkeys(totals), NVLINK: None}
    per_link = [
        {m.key: totals[m.total] // links + (totals[m.total] % links if link == 0 else 0) for m in LINK_METRICS}
        for link in range(links)
    ]
    return {**totals, NVLINK: per_link}


def xid_events(seed: int, index: int, elapsed: float) -> int:
    """How many XID errors this GPU has logged: only the node's one XID GPU, every XID_PERIOD_S."""
    if index != seed % 8 or elapsed < XID_FIRST_S:
        return 0
    return 1 + int((elapsed - XID_FIRST_S) // XID_PERIOD_S)


def has_remapped_rows(seed: int, index: int) -> bool:
    return seed % 4 == 0 and index == 1
