"""The iCal feed: a secret address per researcher that calendar apps can read; a wrong token gets nothing."""

import icalendar
import pytest
from django.urls import reverse

from reservations.ical import escape, fold, issue_feed_token
from tests.support.reservations import at, booked


@pytest.fixture
def token(cast):
    return issue_feed_token(cast["owner"])


def feed(client, token):
    return client.get(reverse("fleet:ical", kwargs={"token": token}))


def test_the_feed_parses_and_holds_each_booking_in_utc(client, cast, fleet_gpus, token):
    booked(cast["owner"], fleet_gpus[:2], 1, 3, purpose="ViT; sweep, part 2", deadline_name="NeurIPS 2031")
    booked(cast["teammate"], fleet_gpus[2:3], 1, 3)
    response = feed(client, token)
    assert response.status_code == 200 and response["Content-Type"] == "text/calendar; charset=utf-8"
    calendar = icalendar.Calendar.from_ical(response.content)
    events = calendar.walk("VEVENT")
    assert len(events) == 1
    event = events[0]
    assert event.decoded("DTSTART") == at(1) and event.decoded("DTEND") == at(3)
    assert str(event["SUMMARY"]) == "GPU booking: 2× A100 80GB"
    assert "Purpose: ViT; sweep, part 2" in str(event["DESCRIPTION"])
    assert "Deadline: NeurIPS 2031" in str(event["DESCRIPTION"])
    assert b"DTSTART:" + at(1).strftime("%Y%m%dT%H%M%SZ").encode() in response.content


def test_a_cancelled_booking_is_marked_cancelled_for_calendar_apps(client, cast, fleet_gpus, token):
    from reservations.booking import cancel

    rows = booked(cast["owner"], fleet_gpus[:1], 1, 3)
    cancel(rows[0].booking, cast["owner"])
    event = icalendar.Calendar.from_ical(feed(client, token).content).walk("VEVENT")[0]
    assert str(event["STATUS"]) == "CANCELLED"


def test_a_wrong_token_gets_nothing(client, cast, fleet_gpus, token):
    booked(cast["owner"], fleet_gpus[:1], 1, 3)
    response = feed(client, token[:-2] + "xx")
    assert response.status_code == 404 and b"VEVENT" not in response.content


def test_a_new_address_switches_the_old_one_off(client, cast, token):
    issue_feed_token(cast["owner"])
    assert feed(client, token).status_code == 404


def test_the_feed_needs_no_login_but_the_address_page_does(client, cast):
    response = client.post(reverse("fleet:new-calendar-address"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_researcher_gets_an_address_once_and_it_works(client, cast, fleet_gpus):
    booked(cast["owner"], fleet_gpus[:1], 1, 3)
    client.force_login(cast["owner"])
    response = client.post(reverse("fleet:new-calendar-address"), follow=True)
    body = response.content.decode()
    url = body.split("keep it secret): ")[1].split("<")[0]
    client.logout()
    assert b"BEGIN:VEVENT" in client.get(url).content


def test_text_is_escaped_and_long_lines_are_folded_at_75_octets():
    assert escape("a\\b;c,d\ne") == "a\\\\b\\;c\\,d\\ne"
    line = "DESCRIPTION:" + "ü" * 60
    folded = fold(line)
    assert all(len(part.encode()) <= 75 for part in folded.split("\r\n"))
    assert folded.replace("\r\n ", "") == line
