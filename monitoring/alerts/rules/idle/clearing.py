"""When an open idle-process alert clears: hysteresis over a resolve window, and unknown is never "cleared".

- One sample above the utilization threshold plus a margin resolves it ("working again"), whatever the
  readings before it were; only a sample taken since the alert (last) opened counts.
- Memory must stay under a fraction of the memory threshold for the whole resolve window.
- A process counts as exited only when a known process list lacks it and it has not been sampled for the
  whole resolve window; a missing list (null) or a null reading says nothing.
- A GPU that has sent nothing for ALERT_NO_DATA_MIN ends its alerts as "no data".
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from monitoring.alerts.models import Alert
from monitoring.alerts.windows import gpu_util_windows, process_memory_windows, process_sm_windows, stale_after
from monitoring.storage.models import ProcessSample

NO_DATA_PREFIX = "No data"


def resolve_window() -> timedelta:
    return timedelta(minutes=settings.ALERT_RESOLVE_WINDOW_MIN)


def no_data_after() -> timedelta:
    return timedelta(minutes=settings.ALERT_NO_DATA_MIN)


def busy_above(alert: Alert) -> float:
    return float(alert.details.get("max_util_pct", settings.ALERT_IDLE_MAX_UTIL_PCT)) + (
        settings.ALERT_RESOLVE_UTIL_MARGIN_PCT
    )


def released_below(alert: Alert) -> float:
    minimum = alert.details.get("min_memory_mib", settings.ALERT_IDLE_MIN_MEMORY_MIB)
    return float(minimum) * settings.ALERT_RESOLVE_MEMORY_FRACTION


def resolutions(open_alerts: list[Alert], gpus: list, candidates: dict, now: datetime) -> dict[str, str]:
    """Reasons to resolve open idle alerts, only where the telemetry shows the condition has cleared."""
    by_id = {g.id: g for g in gpus}
    reasons: dict[str, str] = {}
    watched = []
    for alert in open_alerts:
        gpu = by_id.get(alert.gpu_id)
        if gpu is None:
            continue
        if gpu.last_sample_at is None or now - gpu.last_sample_at >= no_data_after():
            reasons[alert.key] = no_data_reason(gpu)
        elif gpu.processes is not None and now - gpu.last_sample_at <= stale_after():
            watched.append(alert)
    reasons.update(cleared(watched, candidates, now))
    return reasons


def no_data_reason(gpu) -> str:
    if gpu.last_sample_at is None:
        return f"{NO_DATA_PREFIX}: the GPU has never reported."
    since = timezone.localtime(gpu.last_sample_at)
    return f"{NO_DATA_PREFIX}: the GPU has not reported since {since:%d %b %H:%M %Z}; closed as no data."


def cleared(alerts: list[Alert], candidates: dict, now: datetime) -> dict[str, str]:
    start = now - resolve_window()
    pairs = [(a.gpu_id, int(a.details["pid"])) for a in alerts]
    memory = process_memory_windows(pairs, start, now)
    peaks = peaks_since_opening(alerts, start, now)
    reasons = {}
    for alert in alerts:
        pair = (alert.gpu_id, int(alert.details["pid"]))
        peak = peaks.get(alert.key)
        known = memory[pair]
        if alert.key not in candidates:
            if known.first is None and not sampled(pair, start, now):
                reasons[alert.key] = "The process exited."
        elif peak is not None and peak >= busy_above(alert):
            reasons[alert.key] = "The process is working again."
        elif known.high is not None and known.high < released_below(alert) and known.starts_by(start):
            reasons[alert.key] = "The process released its GPU memory."
    return reasons


def opened_at(alert: Alert) -> datetime:
    """When the alert last opened (a reopening counts): readings from before it cannot show it cleared."""
    moment = alert.details.get("opened_at")
    return datetime.fromisoformat(moment) if moment else alert.opened_at


def peaks_since_opening(alerts: list[Alert], start: datetime, now: datetime) -> dict[str, float | None]:
    """Alert key → the peak of what it is judged by (its GPU or its own SM share) since it opened, within [start, now).

    Alerts opened at the same moment (most open together) share one read, so the reads follow the openings
    within the resolve window, not the fleet.
    """
    by_since: dict[datetime, list[Alert]] = {}
    for alert in alerts:
        by_since.setdefault(max(start, opened_at(alert)), []).append(alert)
    peaks: dict[str, float | None] = {}
    for since, group in by_since.items():
        gpu_peaks = gpu_util_windows(sorted({a.gpu_id for a in group}), since, now)
        own = [(a.gpu_id, int(a.details["pid"])) for a in group if a.details.get("basis") == "process"]
        process_peaks = process_sm_windows(own, since, now)
        for alert in group:
            pair = (alert.gpu_id, int(alert.details["pid"]))
            stats = process_peaks[pair] if pair in process_peaks else gpu_peaks.get(alert.gpu_id)
            peaks[alert.key] = stats.peak if stats else None
    return peaks


def sampled(pair: tuple[int, int], start: datetime, now: datetime) -> bool:
    """Whether the process appears in any process sample of the window (with or without a memory reading)."""
    return ProcessSample.objects.filter(gpu_id=pair[0], pid=pair[1], ts__gte=start, ts__lt=now).exists()
