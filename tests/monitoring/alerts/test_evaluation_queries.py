"""One evaluation of every rule costs the same number of queries for 10 GPUs as for 50: set-based, never per GPU."""

from collections import Counter
from datetime import timedelta

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from monitoring.agent.metrics import CLOCKS_EVENT_REASONS
from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind, IdleStretchKind
from monitoring.alerts.models import Alert, IdleStretch
from reservations.choices import ReservationStatus
from reservations.models import Reservation
from tests.support.monitoring import T0
from tests.support.telemetry import add_gpu, process, roll_up, stream

MIN = timedelta(minutes=1)
HOT = CLOCKS_EVENT_REASONS["hw_thermal_slowdown"]
IDLE, THROTTLING, TEMPERATURE = AlertKind.IDLE_PROCESS, AlertKind.GPU_THROTTLING, AlertKind.GPU_TEMPERATURE
BOOKING_IDLE = AlertKind.BOOKING_IDLE
ROLES = ["forgotten", "serving", "training", "hot", "shared", "booked", "empty"]


def serving(ts):  # worked in the first minutes, quiet since: idle over the window but underused, never alerted
    return 95 if ts < T0 + 5 * MIN else 0


def build(gpus: int, cast) -> None:
    """A fleet of `gpus` GPUs on 8-GPU nodes, each role in turn, with 40 minutes of telemetry."""
    bob = cast["teammate"]
    old = T0 - timedelta(hours=6)
    for i in range(gpus):
        role, gpu = ROLES[i % len(ROLES)], add_gpu(f"node-{i // 8:02d}", i % 8)
        kept = process(1000 + i, "alice", mem_used_mib=8192, started_at=old)
        if role == "forgotten":
            stream(gpu, T0, T0 + 40 * MIN, util=0, processes=[kept])
        elif role == "serving":
            stream(gpu, T0, T0 + 40 * MIN, util=serving, processes=[kept])
        elif role == "training":
            stream(gpu, T0, T0 + 40 * MIN, util=93, processes=[kept])
        elif role == "hot":
            stream(gpu, T0, T0 + 40 * MIN, util=93, processes=[kept], temp_c=91, clocks_event_reasons=HOT)
        elif role == "shared":  # a busy GPU with an idle notebook beside the trainer: judged by its own SM share
            trainer = process(2000 + i, "bob", mem_used_mib=30000, sm_util=93, started_at=old)
            notebook = process(1000 + i, "alice", mem_used_mib=8192, sm_util=0, started_at=old)
            stream(gpu, T0, T0 + 40 * MIN, util=93, processes=[trainer, notebook])
        else:
            stream(gpu, T0, T0 + 40 * MIN, util=0, processes=[])
        if role == "booked":  # booked by bob and left idle
            Reservation.objects.create(
                user=bob, gpu=gpu, start=T0, end=T0 + 2 * 60 * MIN, status=ReservationStatus.ACTIVE, project=None
            )
    roll_up(T0 + 40 * MIN)


def queries_of_evaluations(gpus: int, cast, clock) -> dict:
    """The fleet built, then its first evaluation (opening alerts) and a steady one; everything rolled back."""
    with transaction.atomic():
        build(gpus, cast)
        counts = {}
        for name, moment in (("first", T0 + 40 * MIN - timedelta(seconds=5)), ("steady", T0 + 40 * MIN)):
            clock.move_to(moment)
            with CaptureQueriesContext(connection) as queries:
                engine.evaluate()
            counts[name] = len(queries)
        counts["alerts"] = sorted(Alert.objects.values_list("kind", flat=True))
        counts["stretches"] = sorted(IdleStretch.objects.values_list("kind", flat=True))
        transaction.set_rollback(True)
    return counts


def test_an_evaluation_makes_as_many_queries_for_50_gpus_as_for_10(cast, clock):
    small, large = queries_of_evaluations(10, cast, clock), queries_of_evaluations(50, cast, clock)
    # Every role raised what it should, so each rule's reads ran in both fleets: 2 and 8 forgotten GPUs,
    # 1 and 7 notebooks idle beside a trainer, 1 and 7 hot GPUs, 1 and 7 idle bookings, 2 and 7 serving GPUs.
    assert Counter(small["alerts"]) == {IDLE: 3, THROTTLING: 1, TEMPERATURE: 1, BOOKING_IDLE: 1}
    assert Counter(large["alerts"]) == {IDLE: 15, THROTTLING: 7, TEMPERATURE: 7, BOOKING_IDLE: 7}
    assert Counter(small["stretches"]) == {IdleStretchKind.FORGOTTEN: 3, IdleStretchKind.UNDERUSED: 2}
    assert Counter(large["stretches"]) == {IdleStretchKind.FORGOTTEN: 15, IdleStretchKind.UNDERUSED: 7}
    assert (small["first"], small["steady"]) == (large["first"], large["steady"])
