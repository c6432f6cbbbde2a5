"""GPU health alerts: sustained heat, thermal throttling and ECC errors, for the admins."""

from datetime import timedelta

import pytest

from monitoring.agent.metrics import CLOCKS_EVENT_REASONS
from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind, AlertSeverity, AlertStatus
from monitoring.alerts.models import Alert
from monitoring.alerts.rules.health import HealthRule
from tests.support.monitoring import T0
from tests.support.telemetry import stream

MIN = timedelta(minutes=1)
SW_THERMAL = CLOCKS_EVENT_REASONS["sw_thermal_slowdown"]
POWER_CAP = CLOCKS_EVENT_REASONS["sw_power_cap"]


def at(clock, moment):
    clock.move_to(moment)
    return engine.evaluate()


def test_a_gpu_hot_for_two_minutes_raises_a_temperature_alert(cast, gpu, clock):
    stream(gpu, T0, T0 + 3 * MIN, util=99, processes=[], temp_c=88)
    at(clock, T0 + 3 * MIN)
    alert = Alert.objects.get(kind=AlertKind.GPU_TEMPERATURE)
    assert alert.owner is None and alert.gpu == gpu
    assert alert.severity == AlertSeverity.WARNING
    assert "85" in alert.message


def test_a_brief_spike_raises_nothing(cast, gpu, clock):
    stream(gpu, T0, T0 + 2 * MIN, util=99, processes=[], temp_c=70)
    stream(gpu, T0 + 2 * MIN, T0 + 3 * MIN, util=99, processes=[], temp_c=90)
    at(clock, T0 + 3 * MIN)
    assert not Alert.objects.filter(kind=AlertKind.GPU_TEMPERATURE).exists()


def test_the_temperature_alert_resolves_after_two_cool_minutes(cast, gpu, clock):
    stream(gpu, T0, T0 + 3 * MIN, util=99, processes=[], temp_c=88)
    at(clock, T0 + 3 * MIN)
    stream(gpu, T0 + 3 * MIN, T0 + 4 * MIN, util=99, processes=[], temp_c=60)
    at(clock, T0 + 4 * MIN)
    assert Alert.objects.get().status == AlertStatus.OPEN
    stream(gpu, T0 + 4 * MIN, T0 + 6 * MIN, util=99, processes=[], temp_c=60)
    at(clock, T0 + 6 * MIN)
    assert Alert.objects.get().status == AlertStatus.RESOLVED


def test_thermal_throttling_raises_an_alert_and_the_power_cap_does_not(cast, gpu, clock):
    other = type(gpu).objects.create(node=gpu.node, index=1, uuid="GPU-capped", model=gpu.model)
    stream(gpu, T0, T0 + MIN, util=99, processes=[], clocks_event_reasons=SW_THERMAL)
    stream(other, T0, T0 + MIN, util=99, processes=[], clocks_event_reasons=POWER_CAP)
    at(clock, T0 + MIN)
    alert = Alert.objects.get(kind=AlertKind.GPU_THROTTLING)
    assert alert.gpu == gpu and "sw_thermal_slowdown" in alert.message


def test_ecc_errors_raise_a_critical_alert_until_the_count_is_reset(cast, gpu, clock):
    stream(gpu, T0, T0 + MIN, util=50, processes=[], ecc_volatile=3)
    at(clock, T0 + MIN)
    alert = Alert.objects.get(kind=AlertKind.GPU_ECC)
    assert alert.severity == AlertSeverity.CRITICAL
    stream(gpu, T0 + MIN, T0 + 2 * MIN, util=50, processes=[], ecc_volatile=0)
    at(clock, T0 + 2 * MIN)
    alert.refresh_from_db()
    assert alert.status == AlertStatus.RESOLVED


def test_a_gpu_without_ecc_reports_nothing(cast, gpu, clock):
    stream(gpu, T0, T0 + MIN, util=50, processes=[], ecc_volatile=None)
    at(clock, T0 + MIN)
    assert not Alert.objects.exists()


def test_throttling_stays_open_while_the_window_still_holds_a_throttled_sample(cast, gpu, clock):
    stream(gpu, T0, T0 + MIN, util=99, processes=[], clocks_event_reasons=SW_THERMAL)
    at(clock, T0 + MIN)
    stream(gpu, T0 + MIN, T0 + 2 * MIN, util=99, processes=[], clocks_event_reasons=0)
    at(clock, T0 + 2 * MIN)
    assert Alert.objects.get(kind=AlertKind.GPU_THROTTLING).status == AlertStatus.OPEN


def test_throttling_resolves_after_a_quiet_window_with_the_default_settings(cast, gpu, clock):
    stream(gpu, T0, T0 + MIN, util=99, processes=[], clocks_event_reasons=SW_THERMAL)
    at(clock, T0 + MIN)
    # The power cap alone is no throttling: it must not hold the alert open.
    stream(gpu, T0 + MIN, T0 + 4 * MIN, util=99, processes=[], clocks_event_reasons=POWER_CAP)
    at(clock, T0 + 4 * MIN)
    alert = Alert.objects.get(kind=AlertKind.GPU_THROTTLING)
    assert alert.status == AlertStatus.RESOLVED
    assert "No throttling" in alert.events.order_by("-id").first().reason


# What makes each health rule open, and what later makes it resolve (ten-second samples, 2-minute window).
OPEN_THEN_CLEAR = {
    AlertKind.GPU_TEMPERATURE: ({"temp_c": 90}, {"temp_c": 50}),
    AlertKind.GPU_THROTTLING: ({"clocks_event_reasons": CLOCKS_EVENT_REASONS["hw_slowdown"]}, {}),
    AlertKind.GPU_ECC: ({"ecc_volatile": 2}, {"ecc_volatile": 0}),
}


@pytest.mark.parametrize("kind", HealthRule.kinds)
def test_every_health_rule_opens_and_then_resolves(cast, gpu, clock, kind):
    bad, good = OPEN_THEN_CLEAR[kind]
    stream(gpu, T0, T0 + 3 * MIN, util=99, processes=[], **bad)
    at(clock, T0 + 3 * MIN)
    alert = Alert.objects.get(kind=kind)
    assert alert.status == AlertStatus.OPEN and alert.gpu == gpu
    stream(gpu, T0 + 3 * MIN, T0 + 6 * MIN, util=99, processes=[], **good)
    at(clock, T0 + 6 * MIN)
    alert.refresh_from_db()
    assert alert.status == AlertStatus.RESOLVED
    assert not Alert.objects.exclude(status=AlertStatus.RESOLVED).exists()
