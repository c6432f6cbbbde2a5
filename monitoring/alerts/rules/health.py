"""GPU health from telemetry: sustained heat, thermal or hardware throttling, uncorrected ECC errors.

Heat and throttling look at every reading of the last few minutes, so an alert opens on a sustained
condition and resolves only after a quiet stretch (no flapping).
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection

from inventory.models import GPU
from monitoring.agent.metrics import CLOCKS_EVENT_REASONS, reasons_names
from monitoring.alerts.choices import AlertKind, AlertSeverity
from monitoring.alerts.findings import Finding, RuleResult
from monitoring.alerts.gpu_rows import GpuRow, gpu_rows
from monitoring.alerts.rules.base import Rule
from monitoring.alerts.windows import bounds, rolled_until, stale_after
from monitoring.storage import latest

# Thermal slowdowns and hardware brakes; the software power cap is left out on purpose: a GPU at full
# load sitting on its power limit is working as designed.
THROTTLE_MASK = (
    CLOCKS_EVENT_REASONS["sw_thermal_slowdown"]
    | CLOCKS_EVENT_REASONS["hw_thermal_slowdown"]
    | CLOCKS_EVENT_REASONS["hw_slowdown"]
    | CLOCKS_EVENT_REASONS["hw_power_brake_slowdown"]
)

# Every GPU at once: the whole minutes the rollup has done from GPUMinute (by bucket), the partial minute
# at the start and the minutes not rolled up yet from raw samples, read by time (BRIN on ts).
HEALTH_SQL = """
SELECT gpu_id, min(coolest), max(hottest), bit_or(reasons)
FROM (
    SELECT gpu_id, temp_c_min AS coolest, temp_c_max AS hottest, clocks_event_reasons_any AS reasons
    FROM monitoring_gpuminute
    WHERE bucket >= %(m0)s AND bucket < %(rolled)s
    UNION ALL
    SELECT gpu_id, temp_c, temp_c, clocks_event_reasons
    FROM monitoring_gpusample
    WHERE (ts >= %(start)s AND ts < %(m0)s) OR (ts >= %(rolled)s AND ts < %(end)s)
) AS readings
GROUP BY gpu_id
"""


def recent_health(start: datetime, end: datetime) -> dict[int, tuple]:
    """GPU id → (lowest temperature, highest temperature, every clock event reason) over [start, end)."""
    b = bounds(start, end)
    b["rolled"] = rolled_until(b)
    with connection.cursor() as cursor:
        cursor.execute(HEALTH_SQL, b)
        return {row[0]: row[1:] for row in cursor.fetchall()}


class HealthRule(Rule):
    """Temperature, throttling and ECC alerts for admins, one per GPU and condition."""

    kinds = [AlertKind.GPU_TEMPERATURE, AlertKind.GPU_THROTTLING, AlertKind.GPU_ECC]
    kind = AlertKind.GPU_TEMPERATURE

    def evaluate(self, now: datetime, open_alerts: list) -> RuleResult:
        gpus = gpu_rows(GPU.objects.filter(latest.sampled_since(now - stale_after())), processes=False)
        window = recent_health(now - timedelta(seconds=settings.ALERT_HEALTH_WINDOW_S), now) if gpus else {}
        result = RuleResult()
        for gpu in gpus:
            stats = window.get(gpu.id)
            for check in (temperature, throttling, ecc):
                fire, clear = check(gpu, stats)
                key = f"{check.kind}:{gpu.uuid}"
                if fire:
                    result.findings.append(fire)
                elif clear:
                    result.resolved[key] = clear
        return result


def base(gpu: GpuRow, kind: AlertKind, title: str, message: str, severity: AlertSeverity, details: dict) -> Finding:
    return Finding(
        key=f"{kind}:{gpu.uuid}",
        kind=kind,
        title=f"{title} on {gpu.hostname} GPU {gpu.index}",
        message=message,
        severity=severity,
        node_id=gpu.node_id,
        gpu_id=gpu.id,
        details={"gpu": gpu.uuid, "node": gpu.hostname, "index": gpu.index, **details},
    )


def temperature(gpu: GpuRow, stats) -> tuple[Finding | None, str]:
    limit, minutes = settings.ALERT_TEMP_C, settings.ALERT_HEALTH_WINDOW_S / 60
    if not stats or stats[0] is None:
        return None, ""
    coolest, hottest = stats[0], stats[1]
    if coolest >= limit:
        severity = AlertSeverity.CRITICAL if coolest >= limit + 5 else AlertSeverity.WARNING
        message = (
            f"At or above {limit:g} °C for {minutes:g} min (now {gpu.temp_c if gpu.temp_c is not None else 'N/A'} °C)."
        )
        return base(gpu, AlertKind.GPU_TEMPERATURE, f"{coolest:g} °C", message, severity, {"min_temp_c": coolest}), ""
    if hottest < limit:
        return None, f"Below {limit:g} °C for {minutes:g} min (peak {hottest:g} °C)."
    return None, ""


def throttling(gpu: GpuRow, stats) -> tuple[Finding | None, str]:
    latest = (gpu.clocks_event_reasons or 0) & THROTTLE_MASK
    if latest:
        names = ", ".join(reasons_names(latest))
        message = f"The driver is slowing the clocks: {names}."
        return base(gpu, AlertKind.GPU_THROTTLING, "Throttling", message, AlertSeverity.WARNING, {"reasons": names}), ""
    reasons_in_window = stats[2] if stats else None
    if reasons_in_window is not None and not reasons_in_window & THROTTLE_MASK:
        return None, f"No throttling for {settings.ALERT_HEALTH_WINDOW_S / 60:g} min."
    return None, ""


def ecc(gpu: GpuRow, stats) -> tuple[Finding | None, str]:
    if gpu.ecc_volatile is None:
        return None, ""
    if gpu.ecc_volatile > 0:
        message = f"{gpu.ecc_volatile} uncorrected ECC errors since the driver loaded: drain the GPU and check it."
        return base(
            gpu, AlertKind.GPU_ECC, "ECC errors", message, AlertSeverity.CRITICAL, {"ecc": gpu.ecc_volatile}
        ), ""
    return None, "The uncorrected ECC error count is back to zero."


temperature.kind = AlertKind.GPU_TEMPERATURE
throttling.kind = AlertKind.GPU_THROTTLING
ecc.kind = AlertKind.GPU_ECC
