"""`make demo` starts with a few bookings on the timeline, made once however often the demo starts."""

import time

from django.core.management import call_command
from django.utils import timezone

from fleet.demo.bookings import DEMO_BOOKINGS
from monitoring.agent.simulate import Simulator
from reservations.choices import ReservationStatus
from reservations.models import Reservation


def test_the_demo_seed_books_now_and_ahead_once_however_often_it_runs(gpu_models, tmp_path):
    call_command("fleet_demo_seed", dir=str(tmp_path))
    rows = list(Reservation.objects.select_related("user"))
    assert len({row.booking for row in rows}) == len(DEMO_BOOKINGS)
    assert all(row.status == ReservationStatus.ACTIVE for row in rows)
    now = timezone.now()
    assert {row.user.username for row in rows if row.start <= now < row.end} == {"alice", "bob"}
    assert {row.user.username for row in rows if row.start > now} == {"alice", "bob", "carol"}
    assert {(row.deadline_name, row.purpose) for row in rows if row.deadline_name} == {
        ("ICML 2027", "Final ablations for the paper")
    }

    call_command("fleet_demo_seed", dir=str(tmp_path))
    assert sorted(Reservation.objects.values_list("pk", flat=True)) == sorted(row.pk for row in rows)


def test_the_bookings_held_now_are_on_gpus_where_the_agents_show_their_holders_working():
    # Otherwise the no-show release would take them back half an hour into the demo.
    for wanted in (w for w in DEMO_BOOKINGS if w.days_ahead is None):
        readings = Simulator(8, wanted.node).sample(time.time())
        for index in wanted.indexes:
            assert wanted.user in {process["user"] for process in readings[index]["processes"]}
