"""Local time on the pages, UTC in the database, and real durations across a DST switch (Europe/Berlin)."""

from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine
from django.urls import reverse
from django.utils import timezone

from reservations.models import Reservation
from reservations.quotas import usage_this_week
from reservations.timeline import build_timeline
from tests.support.reservations import booked

# Berlin springs forward on Sunday 30 March 2031: 02:00 CET becomes 03:00 CEST.
BEFORE_THE_SWITCH = "2031-03-20 09:00:00+00:00"


@pytest.fixture
def berlin(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    with time_machine.travel(BEFORE_THE_SWITCH, tick=False):
        yield


@pytest.fixture
def alice(client, cast, berlin):
    client.force_login(cast["owner"])
    return client


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_the_form_reads_local_time_and_the_database_stores_utc(alice, cast, fleet_gpus):
    data = {"gpus": [fleet_gpus[0].pk], "start": "2031-03-25T10:00", "end": "2031-03-25T12:00"}
    alice.post(reverse("fleet:book"), data)
    row = Reservation.objects.get()
    assert (row.start, row.end) == (utc(2031, 3, 25, 9), utc(2031, 3, 25, 11))


def test_a_local_day_across_the_switch_lasts_23_real_hours(alice, cast, fleet_gpus):
    data = {"gpus": [fleet_gpus[0].pk], "start": "2031-03-29T22:00", "end": "2031-03-30T22:00"}
    alice.post(reverse("fleet:book"), data)
    row = Reservation.objects.get()
    assert (row.start, row.end) == (utc(2031, 3, 29, 21), utc(2031, 3, 30, 20))
    assert row.end - row.start == timedelta(hours=23)


def test_extending_by_24_hours_across_the_switch_adds_24_real_hours(alice, cast, fleet_gpus):
    rows = booked(cast["owner"], fleet_gpus[:1], 0, 1)
    start = utc(2031, 3, 29, 20)  # 21:00 CET
    Reservation.objects.filter(pk=rows[0].pk).update(start=start, end=start + timedelta(hours=1))
    alice.post(reverse("fleet:change-booking", kwargs={"booking": rows[0].booking}), {"extend_hours": "24"})
    row = Reservation.objects.get()
    assert row.end - row.start == timedelta(hours=25)
    body = alice.get(reverse("fleet:booking", kwargs={"booking": row.booking})).content.decode()
    assert "Sun 30 Mar 23:00" in body  # 22:00 CET + 24 h is 23:00 CEST


def test_the_booking_page_shows_local_time_and_names_the_zone(alice, cast, fleet_gpus):
    rows = booked(cast["owner"], fleet_gpus[:1], 0, 1)
    Reservation.objects.filter(pk=rows[0].pk).update(start=utc(2031, 3, 25, 9), end=utc(2031, 3, 25, 11))
    body = alice.get(reverse("fleet:booking", kwargs={"booking": rows[0].booking})).content.decode()
    assert "Tue 25 Mar 10:00" in body and "Tue 25 Mar 12:00" in body and "Times in Europe/Berlin" in body


def test_the_browsers_zone_from_its_cookie_wins_over_the_servers(alice, cast, fleet_gpus):
    alice.cookies["tz"] = "America%2FNew_York"  # as the page's script writes it
    data = {"gpus": [fleet_gpus[0].pk], "start": "2031-03-25T10:00", "end": "2031-03-25T12:00"}
    alice.post(reverse("fleet:book"), data)
    assert Reservation.objects.get().start == utc(2031, 3, 25, 14)


def test_a_form_is_read_in_the_zone_it_was_shown_in(alice, cast, fleet_gpus):
    alice.cookies["tz"] = "America/New_York"
    data = {"gpus": [fleet_gpus[0].pk], "start": "2031-03-25T10:00", "end": "2031-03-25T12:00", "tz": "Asia/Tokyo"}
    alice.post(reverse("fleet:book"), data)
    assert Reservation.objects.get().start == utc(2031, 3, 25, 1)


def test_an_unknown_zone_falls_back_to_the_servers(alice, cast, fleet_gpus):
    alice.cookies["tz"] = "../../etc/passwd"
    data = {"gpus": [fleet_gpus[0].pk], "start": "2031-03-25T10:00", "end": "2031-03-25T12:00", "tz": "Mars/Olympus"}
    alice.post(reverse("fleet:book"), data)
    assert Reservation.objects.get().start == utc(2031, 3, 25, 9)


def test_a_local_time_that_does_not_exist_gets_a_form_error(alice, fleet_gpus):
    data = {"gpus": [fleet_gpus[0].pk], "start": "2031-03-30T02:30", "end": "2031-03-30T05:00"}
    response = alice.post(reverse("fleet:book"), data)
    assert response.status_code == 400
    assert "couldn’t be interpreted in time zone Europe/Berlin" in response.content.decode()
    assert not Reservation.objects.exists()


def test_quotas_count_real_hours_across_the_switch(cast, fleet_gpus, berlin):
    rows = booked(cast["owner"], fleet_gpus[:1], 0, 1)
    Reservation.objects.filter(pk=rows[0].pk).update(start=utc(2031, 3, 29, 21), end=utc(2031, 3, 30, 20))
    with time_machine.travel("2031-03-30 12:00:00+00:00", tick=False):
        mine = usage_this_week(cast["owner"], timezone.now())[0]
    assert mine.booked_hours == 23


def test_the_timeline_places_days_by_their_real_length(cast, fleet_gpus, berlin):
    with timezone.override("Europe/Berlin"):
        board = build_timeline(date(2031, 3, 30), 2, cast["owner"])
    # 30 March is 23 hours long; the next day starts at 23/47 of the width.
    assert board.days[1][0] == pytest.approx(100 * 23 / 47, abs=0.01)


def test_the_longest_booking_is_measured_in_real_hours_across_the_switch(alice, cast, fleet_gpus):
    from reservations.models import QuotaPolicy

    QuotaPolicy.objects.update_or_create(pk=1, defaults={"longest_booking_hours": 23})
    data = {"gpus": [fleet_gpus[0].pk], "start": "2031-03-29T22:00", "end": "2031-03-30T22:00"}
    assert alice.post(reverse("fleet:book"), data).status_code == 302
    assert Reservation.objects.get().end - Reservation.objects.get().start == timedelta(hours=23)
