"""The idle-process rule: measured over the whole window, owned, per-project thresholds, resolving itself."""

from datetime import timedelta

import pytest

from monitoring.alerts import engine
from monitoring.alerts.choices import AlertEventKind, AlertKind, AlertStatus
from monitoring.alerts.models import Alert, AlertEvent, IdlePolicy
from monitoring.storage.models import GPUMinute
from tests.support.monitoring import T0
from tests.support.telemetry import add_gpu, latest_state, process, roll_up, stream

MIN = timedelta(minutes=1)


def idle_alerts():
    return Alert.objects.filter(kind=AlertKind.IDLE_PROCESS)


def evaluate_at(clock, moment):
    clock.move_to(moment)
    roll_up(moment)
    return engine.evaluate()


@pytest.fixture
def forgotten():
    """alice's notebook kernel: 8 GiB held since two hours before T0."""
    return process(4242, "alice", mem_used_mib=8192, started_at=T0 - timedelta(hours=2), cmdline="python -m ipykernel")


def test_it_raises_nothing_before_thirty_minutes_of_idleness(cast, gpu, clock, forgotten):
    stream(gpu, T0, T0 + 30 * MIN, util=0, processes=[forgotten])
    for minute in (10, 29, 30):
        evaluate_at(clock, T0 + minute * MIN - timedelta(seconds=1))
    assert not idle_alerts().exists()


def test_it_fires_once_after_thirty_minutes_of_idleness(cast, gpu, clock, forgotten):
    stream(gpu, T0, T0 + 32 * MIN, util=0, processes=[forgotten])
    evaluate_at(clock, T0 + 30 * MIN + timedelta(seconds=5))
    evaluate_at(clock, T0 + 31 * MIN)
    evaluate_at(clock, T0 + 32 * MIN)
    alert = idle_alerts().get()
    assert GPUMinute.objects.filter(gpu=gpu).count() >= 30  # whole minutes came from the rollup
    assert alert.owner == cast["owner"]
    assert alert.project == cast["project"]
    assert alert.details["pid"] == 4242 and alert.details["basis"] == "gpu"
    assert "8.0 GiB" in alert.message and "30 min" in alert.message
    assert AlertEvent.objects.filter(alert=alert, kind=AlertEventKind.OPENED).count() == 1


def test_a_data_loader_stall_shorter_than_the_window_raises_nothing(cast, gpu, clock):
    trainer = process(777, "alice", mem_used_mib=30000, started_at=T0 - timedelta(hours=1))

    def util(ts):  # training at 95 %, stalled on data for 20 minutes in the middle
        return 0 if T0 + 20 * MIN <= ts < T0 + 40 * MIN else 95

    stream(gpu, T0, T0 + 75 * MIN, util=util, processes=[trainer])
    for minute in range(21, 76, 3):
        evaluate_at(clock, T0 + minute * MIN)
    assert not idle_alerts().exists()


def test_it_resolves_when_the_process_has_been_gone_for_the_resolve_window(cast, gpu, clock, forgotten):
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[forgotten])
    evaluate_at(clock, T0 + 31 * MIN)
    stream(gpu, T0 + 31 * MIN, T0 + 37 * MIN, util=0, processes=[])
    evaluate_at(clock, T0 + 34 * MIN)
    assert idle_alerts().get().status == AlertStatus.OPEN  # gone 3 min of the 5-min resolve window
    evaluate_at(clock, T0 + 37 * MIN)
    alert = idle_alerts().get()
    assert alert.status == AlertStatus.RESOLVED
    assert alert.resolution == "The process exited."
    assert list(alert.events.values_list("kind", flat=True)) == ["opened", "resolved"]


def test_it_resolves_when_the_process_works_again(cast, gpu, clock, forgotten):
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[forgotten])
    evaluate_at(clock, T0 + 31 * MIN)
    stream(gpu, T0 + 31 * MIN, T0 + 32 * MIN, util=88, processes=[forgotten])
    evaluate_at(clock, T0 + 32 * MIN)
    assert idle_alerts().get().resolution == "The process is working again."


def test_a_new_idle_stretch_after_the_reopen_period_opens_a_new_alert(cast, gpu, clock, forgotten, settings):
    settings.ALERT_REOPEN_WITHIN_H = 0.5  # the first alert resolved 31 min before the second stretch
    settings.ALERT_IDLE_FORGOTTEN_H = 0  # no look-back: the minute of work between does not make it underused
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[forgotten])
    evaluate_at(clock, T0 + 31 * MIN)
    stream(gpu, T0 + 31 * MIN, T0 + 32 * MIN, util=90, processes=[forgotten])
    evaluate_at(clock, T0 + 32 * MIN)
    stream(gpu, T0 + 32 * MIN, T0 + 63 * MIN, util=0, processes=[forgotten])
    evaluate_at(clock, T0 + 63 * MIN)
    assert idle_alerts().count() == 2
    assert idle_alerts().filter(status=AlertStatus.OPEN).count() == 1


def test_a_process_holding_little_memory_is_left_alone(cast, gpu, clock):
    small = process(99, "alice", mem_used_mib=512, started_at=T0 - timedelta(hours=1))
    stream(gpu, T0, T0 + 40 * MIN, util=0, processes=[small])
    evaluate_at(clock, T0 + 40 * MIN)
    assert not idle_alerts().exists()


def test_a_gap_in_the_telemetry_is_not_idleness(cast, gpu, clock, forgotten):
    stream(gpu, T0, T0 + 10 * MIN, util=0, processes=[forgotten])
    stream(gpu, T0 + 15 * MIN, T0 + 40 * MIN, util=0, processes=[forgotten])
    evaluate_at(clock, T0 + 40 * MIN)
    assert not idle_alerts().exists()


def test_a_process_that_started_inside_the_window_is_not_idle_yet(cast, gpu, clock):
    fresh = process(5, "alice", started_at=T0 + 5 * MIN)
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[fresh])
    evaluate_at(clock, T0 + 31 * MIN)
    assert not idle_alerts().exists()


def test_without_a_start_time_it_needs_the_process_sampled_at_the_window_start(cast, gpu, clock):
    unknown = process(5, "alice", started_at=None)
    stream(gpu, T0 - 30 * MIN, T0, util=0, processes=[])
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[unknown])
    evaluate_at(clock, T0 + 29 * MIN + timedelta(seconds=30))
    assert not idle_alerts().exists()
    evaluate_at(clock, T0 + 30 * MIN)
    assert idle_alerts().count() == 1


def test_on_a_busy_gpu_the_process_own_sm_share_decides(cast, gpu, clock):
    worker = process(10, "bob", mem_used_mib=20000, sm_util=90, started_at=T0 - timedelta(hours=1))
    sleeper = process(11, "alice", mem_used_mib=6000, sm_util=0, started_at=T0 - timedelta(hours=1))
    stream(gpu, T0, T0 + 31 * MIN, util=90, processes=[worker, sleeper])
    evaluate_at(clock, T0 + 31 * MIN)
    alert = idle_alerts().get()
    assert (alert.owner, alert.details["pid"], alert.details["basis"]) == (cast["owner"], 11, "process")
    assert "its own SM share" in alert.message


def test_a_project_can_shorten_the_window(cast, gpu, clock, forgotten):
    IdlePolicy.objects.create(project=cast["project"], window_minutes=10, max_util_pct=2)
    stream(gpu, T0, T0 + 11 * MIN, util=0, processes=[forgotten])
    evaluate_at(clock, T0 + 11 * MIN)
    alert = idle_alerts().get()
    assert alert.details["window_minutes"] == 10 and alert.details["max_util_pct"] == 2


def test_an_unknown_os_user_goes_to_the_admins(cast, gpu, clock):
    carol = process(31337, "carol", mem_used_mib=70000, started_at=T0 - timedelta(days=3))
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[carol])
    evaluate_at(clock, T0 + 31 * MIN)
    alert = idle_alerts().get()
    assert alert.owner is None and alert.project is None
    assert "carol's python" in alert.message


def test_a_silent_gpu_neither_fires_nor_resolves(cast, gpu, clock, forgotten):
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[forgotten])
    evaluate_at(clock, T0 + 31 * MIN)
    latest_state(gpu, T0 + 31 * MIN, 0, [])  # the process is gone from the last frame...
    evaluate_at(clock, T0 + 40 * MIN)  # ...but nothing arrived for 9 minutes: nothing is known
    assert idle_alerts().get().status == AlertStatus.OPEN


def test_several_gpus_are_judged_in_one_pass(cast, clock, forgotten, django_assert_max_num_queries):
    gpus = [add_gpu("gpu-02", i) for i in range(6)]
    for g in gpus:
        stream(g, T0, T0 + 31 * MIN, util=0 if g.index % 2 else 90, processes=[forgotten])
    clock.move_to(T0 + 31 * MIN)
    roll_up(T0 + 31 * MIN)
    with django_assert_max_num_queries(40):
        engine.evaluate()
    assert sorted(a.gpu.index for a in idle_alerts()) == [1, 3, 5]


def test_a_process_idle_again_within_a_day_reopens_its_alert_and_counts(cast, gpu, clock, forgotten, settings):
    settings.ALERT_IDLE_FORGOTTEN_H = 0  # no look-back: its minutes of work do not make it underused
    busy_at = [31, 63]  # busy for a minute twice; idle the rest of the time
    stream(gpu, T0, T0 + 95 * MIN, util=lambda ts: 90 if (ts - T0) // MIN in busy_at else 0, processes=[forgotten])
    for minute in (30, 32, 62, 64, 94):
        evaluate_at(clock, T0 + minute * MIN + timedelta(seconds=5))
    alert = idle_alerts().get()  # one alert, not three
    assert alert.status == AlertStatus.OPEN and alert.details["reopened"] == 3
    opened = list(alert.events.filter(kind=AlertEventKind.OPENED).order_by("id").values_list("reason", flat=True))
    assert len(opened) == 3 and opened[2].startswith("Idle again (3rd time in 24 h): ")
    assert alert.events.filter(kind=AlertEventKind.RESOLVED).count() == 2
