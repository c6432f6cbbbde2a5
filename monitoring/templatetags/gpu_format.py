"""Formatting GPU figures on pages the way static/js/format.js does it live: null is "N/A", never zero."""

import math
import time

from django import template

from inventory.choices import NodeStatus
from monitoring.live.choices import ThrottleReason, UtilizationBand

register = template.Library()

NA = "N/A"


@register.filter
def na(value, unit: str = "") -> str:
    """A whole number with its unit, or N/A."""
    if value is None:
        return NA
    return f"{half_up(value)} {unit}".strip()


def half_up(value: float) -> int:
    """Round halves up, as JavaScript's Math.round does, so a live tile and a fresh page agree."""
    return math.floor(value + 0.5)


def gb_s(kib_s) -> str:
    """A KiB/s figure in GB/s with one decimal, or N/A (NVLink's unit on datasheets)."""
    return NA if kib_s is None else f"{kib_s * 1024 / 1e9:.1f}"


@register.filter
def link_rates(link: dict) -> str:
    """One NVLink's "TX / RX" in GB/s; N/A while the link is down."""
    return f"{gb_s(link.get('tx_kib_s'))} / {gb_s(link.get('rx_kib_s'))}"


@register.filter
def nvlink_total(gpu: dict) -> str:
    return f"{gb_s(gpu.get('nvlink_tx_kib_s'))} / {gb_s(gpu.get('nvlink_rx_kib_s'))} GB/s"


@register.filter
def gib(mib) -> str:
    return NA if mib is None else f"{mib / 1024:.1f}"


@register.filter
def mem_text(gpu: dict) -> str:
    """ "58.8 / 79.6 GiB" (used / total)."""
    return f"{gib(gpu.get('mem_used_mib'))} / {gib(gpu.get('memory_total_mib'))} GiB"


@register.filter
def mem_pct(gpu: dict) -> int:
    used, total = gpu.get("mem_used_mib"), gpu.get("memory_total_mib")
    if used is None or not total:
        return 0
    return max(0, min(100, half_up(100 * used / total)))


@register.filter
def band_class(band: str) -> str:
    return UtilizationBand(band).colour


@register.filter
def band_text(gpu: dict) -> str:
    """The band's label; an idle GPU that still has processes is "held" (memory kept, nothing running)."""
    held = gpu.get("band") == UtilizationBand.IDLE and gpu.get("processes")
    return f"{UtilizationBand(gpu['band']).label} · held" if held else UtilizationBand(gpu["band"]).label


@register.filter
def throttle_label(reason: str) -> str:
    return ThrottleReason(reason).label


@register.filter
def throttle_colour(reason: str) -> str:
    return ThrottleReason(reason).colour


@register.simple_tag
def is_free(gpu: dict, status: str, viewer) -> bool:
    """Free for the viewer now (reservations/availability.py): online, reporting, nobody else's booking or memory."""
    me = viewer.get_username() if viewer is not None else ""
    holder = gpu.get("holder")
    return (
        status == NodeStatus.ONLINE
        and gpu.get("ts") is not None
        and not (holder and holder.get("user") != me)
        and all(name == me for name in gpu.get("in_use_by") or [])
    )


@register.filter
def running_for(started_at) -> str:
    """How long a process has run, from its start in UNIX seconds: "3 d 4 h", "2 h 5 min", "40 s"."""
    if started_at is None:
        return NA
    seconds = max(0, int(time.time() - started_at))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min" if minutes else f"{seconds} s"


@register.filter
def node_is_offline(node: dict) -> bool:
    return node.get("status") == NodeStatus.OFFLINE


@register.simple_tag
def live_labels() -> dict:
    """Labels and colours from inventory/choices.py for the page scripts (json_script)."""
    return {
        "bands": {band.value: [band.label, band.colour] for band in UtilizationBand},
        "throttle": {reason.value: [reason.label, reason.colour] for reason in ThrottleReason},
        "nodeStatus": {status.value: [status.label, status.colour] for status in NodeStatus},
    }


@register.filter
def kw(watts) -> str:
    """Total power: "582 W", or "3.2 kW" from 1 kW on."""
    if watts is None:
        return NA
    return f"{watts / 1000:.1f} kW" if watts >= 1000 else f"{half_up(watts)} W"


@register.filter
def isotime(unix_seconds) -> str:
    """UNIX seconds as ISO 8601 UTC, for <time datetime> (the page shows it in the browser's time zone)."""
    from datetime import UTC, datetime

    return "" if unix_seconds is None else datetime.fromtimestamp(unix_seconds, UTC).isoformat(timespec="seconds")


@register.simple_tag
def utilization_legend() -> list[tuple[str, str, str]]:
    """(label, CSS class, range) of each utilization band, idle first."""
    from monitoring.live.choices import UTILIZATION_BAND_FLOORS

    floors = sorted((floor, band) for floor, band in UTILIZATION_BAND_FLOORS)
    ceilings = [floor for floor, _ in floors[1:]] + [100]
    legend = [(UtilizationBand.IDLE.label, UtilizationBand.IDLE.colour, f"< {floors[0][0]} %")]
    for (floor, band), ceiling in zip(floors, ceilings, strict=True):
        legend.append((band.label, band.colour, f"{floor}–{ceiling} %"))
    legend.append((UtilizationBand.UNKNOWN.label, UtilizationBand.UNKNOWN.colour, "no reading"))
    return legend


@register.filter
def has_processes(gpus: list[dict]) -> bool:
    return any(gpu.get("processes") for gpu in gpus)


@register.filter
def gpu_refs(gpus: list[dict]) -> list[dict]:
    """What the chart scripts need to know of each GPU on the page."""
    return [{"uuid": gpu["uuid"], "index": gpu["index"], "node": gpu["node"]} for gpu in gpus]


@register.filter
def local_time(unix_seconds) -> str:
    """UNIX seconds as a short local time of the site ("Mon 18:00"), N/A when missing."""
    from datetime import UTC, datetime

    from django.utils import timezone

    if unix_seconds is None:
        return NA
    return timezone.localtime(datetime.fromtimestamp(unix_seconds, UTC)).strftime("%a %d %b %H:%M")
