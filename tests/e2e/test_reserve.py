"""A researcher in Berlin books a free slot from the timeline in a real browser."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model

from reservations.models import Reservation
from tests.conftest import PASSWORD, log_in
from tests.support.reservations import at, make_fleet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def berlin_page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, timezone_id="Europe/Berlin")
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def test_a_researcher_books_a_free_slot_from_the_timeline(berlin_page, asgi_server, gpu_models):
    page = berlin_page
    get_user_model().objects.create_user("alice", "alice@example.org", PASSWORD)
    gpus = make_fleet({"gpu-e2e-01": ("A100 80GB", 2)})
    log_in(page, asgi_server, "alice")

    page.goto(asgi_server.url + "/reservations/")
    page.wait_for_selector("text=Times in Europe/Berlin")  # the page took the browser's zone
    track = page.locator(f".tl-track[data-gpu='{gpus[1].pk}']")
    box = track.bounding_box()
    track.click(position={"x": box["width"] * 0.6, "y": box["height"] / 2})

    page.wait_for_url("**/reservations/book/**")
    assert page.locator("#id_gpus option:checked").inner_text().startswith("gpu-e2e-01:1")
    local_start = page.input_value("#id_start")
    page.fill("#id_purpose", "e2e check")
    page.click("button[type=submit]:has-text('Book')")

    page.wait_for_selector("text=Booked 1 GPU(s)")
    row = Reservation.objects.get()
    assert row.gpu_id == gpus[1].pk and row.purpose == "e2e check"
    expected = datetime.strptime(local_start, "%Y-%m-%dT%H:%M").replace(tzinfo=ZoneInfo("Europe/Berlin"))
    assert row.start == expected and (row.end - row.start).total_seconds() == 4 * 3600

    page.goto(asgi_server.url + "/reservations/")
    bar = page.locator(".tl-bar.mine")
    assert bar.count() == 1 and "alice" in bar.inner_text()


def test_a_taken_slot_shows_who_holds_it(berlin_page, asgi_server, gpu_models):
    page = berlin_page
    User = get_user_model()
    User.objects.create_user("alice", "alice@example.org", PASSWORD)
    bob = User.objects.create_user("bob", "bob@example.org", PASSWORD)
    gpus = make_fleet({"gpu-e2e-01": ("A100 80GB", 1)})
    log_in(page, asgi_server, "alice")
    start = at(24)
    page.goto(asgi_server.url + f"/reservations/book/?gpu={gpus[0].pk}&start={start:%Y-%m-%dT%H:%M:%SZ}")
    # bob books it while alice is still looking at the form
    Reservation.objects.create(user=bob, gpu=gpus[0], start=start - timedelta(hours=2), end=start + timedelta(hours=8))
    page.click("button[type=submit]:has-text('Book')")
    assert "is taken by bob until" in page.locator("[role=alert]").first.inner_text()
    assert Reservation.objects.count() == 1
