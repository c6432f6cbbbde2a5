"""Reclaim, opt-in per project: warnings at T and T + W, then the node worker ends the idle process at T + 2W."""

import re
import subprocess
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import psutil
import pytest
import time_machine
from django.conf import settings

from inventory.models import OsAccount, Project
from monitoring.alerts import engine
from monitoring.alerts.choices import AlertEventKind, AlertKind, ReclaimStatus
from monitoring.alerts.models import Alert, IdlePolicy, Reclaim, ReclaimExemption
from monitoring.alerts.rules.idle.reclaim import end_process
from monitoring.notify.choices import TransportKind
from monitoring.notify.from_events import dispatch_pending
from monitoring.notify.models import Notification
from tests.support.monitoring import NODE
from tests.support.telemetry import add_gpu, process, roll_up, stream
from tests.support.workers import wait_for

MIN = timedelta(minutes=1)
ME = psutil.Process().username()  # the sleepers run as whoever runs the tests
# The sleepers start now, for real; the story starts an hour later so they were there all along.
T0 = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(hours=1)


@pytest.fixture
def clock():
    with time_machine.travel(T0, tick=False) as traveller:
        yield traveller


@pytest.fixture
def sleepers():
    started = [subprocess.Popen(["sleep", "600"]), subprocess.Popen(["sleep", "601"])]
    yield started
    for child in started:
        if child.poll() is None:
            child.kill()
        child.wait()


def reported(child: subprocess.Popen) -> dict:
    real = psutil.Process(child.pid)
    started = datetime.fromtimestamp(real.create_time(), tz=UTC)
    return process(child.pid, ME, mem_used_mib=4096, started_at=started, name="sleep", cmdline=" ".join(real.cmdline()))


@pytest.fixture
def fleet(cast, sleepers):
    """alice (OS user ME) runs an idle sleeper on GPU 0 and a busy one on GPU 1 of the test node."""
    OsAccount.objects.create(username=ME, user=cast["owner"])
    idle_gpu, busy_gpu = add_gpu(NODE, 0), add_gpu(NODE, 1)
    return {"idle": (idle_gpu, reported(sleepers[0])), "busy": (busy_gpu, reported(sleepers[1])), "fed": 0}


def run_until(clock, fleet, minutes: list[int]) -> None:
    """Feed telemetry up to each minute (from where the last call stopped) and evaluate there."""
    for minute in minutes:
        for name, util in (("idle", 0), ("busy", 90)):
            gpu, proc = fleet[name]
            stream(gpu, T0 + fleet["fed"] * MIN, T0 + minute * MIN, util=util, processes=[proc])
        fleet["fed"] = minute
        clock.move_to(T0 + minute * MIN)
        roll_up(T0 + minute * MIN)
        engine.evaluate()
        dispatch_pending()  # as the beat task does: warnings are delivered before the next evaluation


def reclaim_policy(project, **fields) -> IdlePolicy:
    return IdlePolicy.objects.create(project=project, reclaim=True, reclaim_grace_s=3, **fields)


@pytest.mark.django_db(transaction=True)
def test_the_node_worker_ends_only_the_idle_process_after_both_warnings(celery_worker, gpu_models, fleet, sleepers):
    reclaim_policy(Project.objects.get(name="vision"))
    with time_machine.travel(T0, tick=False) as clock:
        run_until(clock, fleet, [31, 32, 62])
        alert = Alert.objects.get(kind=AlertKind.IDLE_PROCESS)
        assert alert.stage == 2 and not Reclaim.objects.exists()
        run_until(clock, fleet, [93])
    reclaim = wait_for(lambda: Reclaim.objects.exclude(status=ReclaimStatus.REQUESTED).first(), what="the reclaim")
    assert reclaim.status == ReclaimStatus.TERMINATED, reclaim.error
    assert sleepers[0].wait(timeout=10) == -15
    assert sleepers[1].poll() is None
    assert (reclaim.pid, reclaim.os_user, reclaim.owner.username) == (sleepers[0].pid, ME, "alice")
    assert reclaim.cmdline == "sleep 600" and reclaim.signalled_at and reclaim.finished_at
    kinds = list(Alert.objects.get().events.order_by("id").values_list("kind", flat=True))
    assert kinds == ["opened", "warned", "warned", "reclaim_requested", "reclaimed"]
    wait_for(
        lambda: Notification.objects.filter(
            event__kind=AlertEventKind.RECLAIMED, user__username="alice", transport=TransportKind.IN_APP
        ).exists(),
        what="telling alice",
    )


def test_nothing_is_reclaimed_where_the_project_did_not_opt_in(cast, fleet, clock):
    run_until(clock, fleet, [31, 62, 93, 124])
    alert = Alert.objects.get(kind=AlertKind.IDLE_PROCESS)
    assert alert.stage == 1 and not Reclaim.objects.exists()


def test_a_late_evaluation_still_gives_the_second_warning_a_full_window_before_the_end(cast, fleet, clock):
    reclaim_policy(cast["project"])
    run_until(clock, fleet, [31, 32, 120])
    alert = Alert.objects.get(kind=AlertKind.IDLE_PROCESS)
    assert alert.stage == 2 and not Reclaim.objects.exists()
    assert alert.details["ends_at"] == (T0 + 150 * MIN).isoformat()
    run_until(clock, fleet, [149])
    assert not Reclaim.objects.exists()
    run_until(clock, fleet, [150])
    assert Reclaim.objects.get().status == ReclaimStatus.REQUESTED


def test_reclaim_turned_on_for_an_already_idle_process_warns_twice_in_the_future_first(cast, fleet, clock):
    run_until(clock, fleet, [31, 45, 100])  # idle for over an hour and a half before the project opts in
    reclaim_policy(cast["project"])
    run_until(clock, fleet, [101, 110, 131, 145, 161])
    alert = Alert.objects.get(kind=AlertKind.IDLE_PROCESS)
    warnings = list(alert.events.filter(kind=AlertEventKind.WARNED).order_by("id"))
    requested = alert.events.get(kind=AlertEventKind.RECLAIM_REQUESTED)
    assert [w.created for w in warnings] == [T0 + 101 * MIN, T0 + 131 * MIN]
    assert requested.created == T0 + 161 * MIN
    assert requested.created - warnings[1].created >= 30 * MIN
    for warning in warnings:
        named = re.search(r"(\d\d \w{3} \d\d:\d\d) (\S+)\.$", warning.reason)
        assert named, warning.reason
        when = datetime.strptime(f"{named[1]} {T0.year}", "%d %b %H:%M %Y").replace(tzinfo=ZoneInfo(settings.TIME_ZONE))
        assert when > warning.created, warning.reason


def test_exempt_users_and_nodes_keep_their_processes(cast, fleet, clock):
    reclaim_policy(cast["project"])
    exemption = ReclaimExemption.objects.create(user=cast["owner"], reason="long debugging session")
    run_until(clock, fleet, [31, 62, 93])
    assert not Reclaim.objects.exists()
    exemption.delete()
    ReclaimExemption.objects.create(node=fleet["idle"][0].node)
    run_until(clock, fleet, [124])
    assert not Reclaim.objects.exists()


def test_a_project_window_sets_the_reclaim_pace(cast, fleet, clock):
    reclaim_policy(cast["project"], window_minutes=10)
    run_until(clock, fleet, [11, 12, 22, 32])
    assert Reclaim.objects.get().pid == fleet["idle"][1]["pid"]


def make_reclaim(fleet, **overrides) -> Reclaim:
    gpu, proc = fleet["idle"]
    alert = Alert.objects.create(kind=AlertKind.IDLE_PROCESS, key="k", title="t", gpu=gpu, node=gpu.node)
    fields = {
        "alert": alert,
        "node": gpu.node,
        "gpu": gpu,
        "os_user": ME,
        "pid": proc["pid"],
        "cmdline": proc["cmdline"],
        "process_started_at": datetime.fromtimestamp(proc["started_at"], tz=UTC),
        "grace_s": 3,
    }
    return Reclaim.objects.create(**{**fields, **overrides})


def test_a_pid_now_running_another_command_is_left_alone(cast, fleet, sleepers):
    reclaim = make_reclaim(fleet, cmdline="python train.py")
    assert end_process(reclaim.pk) == ReclaimStatus.MISMATCH
    assert sleepers[0].poll() is None
    assert "not 'python train.py'" in Reclaim.objects.get().error


def test_a_pid_reused_by_a_younger_process_is_left_alone(cast, fleet, sleepers):
    earlier = datetime.fromtimestamp(fleet["idle"][1]["started_at"], tz=UTC) - timedelta(hours=1)
    reclaim = make_reclaim(fleet, process_started_at=earlier)
    assert end_process(reclaim.pk) == ReclaimStatus.MISMATCH
    assert sleepers[0].poll() is None


def test_a_process_that_is_already_gone_is_recorded_as_gone(cast, fleet, sleepers):
    sleepers[0].kill()
    sleepers[0].wait()
    reclaim = make_reclaim(fleet)
    assert end_process(reclaim.pk) == ReclaimStatus.GONE


def test_a_reclaim_runs_once(cast, fleet, sleepers):
    reclaim = make_reclaim(fleet)
    assert end_process(reclaim.pk) == ReclaimStatus.TERMINATED
    assert end_process(reclaim.pk) == "claimed elsewhere"
    assert Reclaim.objects.get().alert.events.get().kind == AlertEventKind.RECLAIMED
