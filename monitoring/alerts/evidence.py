"""The values that made an alert fire: its GPU's utilization and memory over the alert's window, with thresholds.

Read through monitoring.storage.series (the coarsest table that covers the range), so a long-open alert
draws minute or hour averages and a fresh one raw samples. Times are in the active (viewer's) zone.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from monitoring.alerts.choices import AlertKind
from monitoring.alerts.models import Alert
from monitoring.storage.series import gpu_series

MAX_SPAN = timedelta(days=7)


def window_of(alert: Alert) -> timedelta:
    minutes = alert.details.get("window_minutes")
    if minutes:
        return timedelta(minutes=float(minutes))
    return timedelta(seconds=settings.ALERT_HEALTH_WINDOW_S)


def span(alert: Alert, now: datetime) -> tuple[datetime, datetime]:
    """From a window before the alert opened to its resolution (or now), at most MAX_SPAN back."""
    end = alert.resolved_at or now
    start = max(alert.opened_at - window_of(alert), end - MAX_SPAN)
    return start, end


def thresholds(alert: Alert) -> dict[str, float]:
    d = alert.details
    found = {}
    if d.get("max_util_pct") is not None:
        found["util_gpu"] = float(d["max_util_pct"])
    if d.get("min_memory_mib") is not None:
        found["mem_used_mib"] = float(d["min_memory_mib"])
    if alert.kind == AlertKind.GPU_TEMPERATURE:
        found["temp_c"] = float(settings.ALERT_TEMP_C)
    return found


def metrics_of(alert: Alert) -> list[str]:
    return ["util_gpu", "mem_used_mib"] + (["temp_c"] if alert.kind == AlertKind.GPU_TEMPERATURE else [])


def local(moment: datetime) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S")


def evidence(alert: Alert, now: datetime | None = None) -> dict | None:
    """What the alert page's chart draws; None for an alert about no GPU."""
    if alert.gpu_id is None:
        return None
    start, end = span(alert, now or timezone.now())
    metrics = metrics_of(alert)
    found = gpu_series([alert.gpu_id], metrics, start, end)
    series = found["gpus"].get(alert.gpu_id, {})
    return {
        "resolution": found["resolution"],
        "ts": [local(t) for t in series.get("ts", [])],
        "series": {m: series.get(m, []) for m in metrics},
        "thresholds": thresholds(alert),
        "start": local(start),
        "end": local(end),
        "opened": local(alert.opened_at),
        "zone": timezone.localtime(end).tzname(),
    }
