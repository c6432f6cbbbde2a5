"""Forgotten or underused: only a process with no real work for hours raises the idle-process alert.

One that bursts to real work between quiet stretches is underused: recorded for the underused-GPU report
with its idle cost, never alerted, escalated or reclaimed.
"""

from datetime import timedelta

import pytest

from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind, IdleStretchKind
from monitoring.alerts.models import Alert, IdleStretch
from tests.support.monitoring import T0
from tests.support.telemetry import process, roll_up, stream

MIN = timedelta(minutes=1)


def evaluate_at(clock, moment):
    clock.move_to(moment)
    roll_up(moment)
    engine.evaluate()


@pytest.fixture
def server():
    """alice's inference server: 60 GB of weights held since a day before T0."""
    return process(5000, "alice", mem_used_mib=60000, started_at=T0 - timedelta(days=1), name="vllm")


def test_a_process_that_worked_within_the_look_back_is_underused_and_not_alerted(cast, gpu, clock, server):
    stream(gpu, T0, T0 + 5 * MIN, util=95, processes=[server])
    stream(gpu, T0 + 5 * MIN, T0 + 40 * MIN, util=0, processes=[server])
    evaluate_at(clock, T0 + 40 * MIN)
    assert not Alert.objects.filter(kind=AlertKind.IDLE_PROCESS).exists()
    (stretch,) = IdleStretch.objects.all()
    assert stretch.kind == IdleStretchKind.UNDERUSED and stretch.owner == cast["owner"]
    assert (stretch.began, stretch.until) == (T0 + 10 * MIN, T0 + 40 * MIN)  # the window the rule measured


def test_it_is_forgotten_once_the_look_back_holds_no_work(cast, gpu, clock, server, settings):
    settings.ALERT_IDLE_FORGOTTEN_H = 1
    stream(gpu, T0, T0 + 5 * MIN, util=95, processes=[server])
    stream(gpu, T0 + 5 * MIN, T0 + 96 * MIN, util=0, processes=[server])
    for minute in range(35, 95, 5):
        evaluate_at(clock, T0 + minute * MIN)
        assert not Alert.objects.filter(kind=AlertKind.IDLE_PROCESS).exists(), minute
    evaluate_at(clock, T0 + 95 * MIN)  # window from minute 65, look-back from minute 5: no work in it
    (alert,) = Alert.objects.filter(kind=AlertKind.IDLE_PROCESS)
    assert alert.details["pid"] == 5000
    (stretch,) = IdleStretch.objects.all()  # one stretch all along, now counted as forgotten
    assert stretch.kind == IdleStretchKind.FORGOTTEN
    assert (stretch.began, stretch.until) == (T0 + 5 * MIN, T0 + 95 * MIN)


def test_a_burst_below_the_work_threshold_is_no_real_work(cast, gpu, clock, server):
    stream(gpu, T0, T0 + 5 * MIN, util=20, processes=[server])  # under ALERT_IDLE_WORK_PCT (30)
    stream(gpu, T0 + 5 * MIN, T0 + 40 * MIN, util=0, processes=[server])
    evaluate_at(clock, T0 + 40 * MIN)
    assert Alert.objects.filter(kind=AlertKind.IDLE_PROCESS).count() == 1
    assert IdleStretch.objects.get().kind == IdleStretchKind.FORGOTTEN


def test_a_process_found_idle_before_is_checked_on_its_readings_since(cast, gpu, clock, server):
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[server])
    evaluate_at(clock, T0 + 31 * MIN)
    stream(gpu, T0 + 31 * MIN, T0 + 32 * MIN, util=0, processes=[{**server, "mem_used_mib": 512}])
    evaluate_at(clock, T0 + 32 * MIN)  # the minute since the last evaluation has a reading under X
    evaluate_at(clock, T0 + 32 * MIN + 30 * (MIN / 60))
    assert IdleStretch.objects.get().until == T0 + 31 * MIN  # not idle since: the stretch stopped there
