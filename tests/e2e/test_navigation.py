"""In a real browser: the navigation bar looks the same on every page, whatever style sheet a page adds."""

import pytest
from django.contrib.auth import get_user_model

from tests.conftest import PASSWORD, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = ["/fleet/", "/reservations/", "/runs/", "/runs/new/", "/alerts/", "/costs/", "/notifications/"]


def nav_geometry(page) -> dict:
    return page.evaluate(
        """() => {
            const box = (selector) => {
                const r = document.querySelector(selector).getBoundingClientRect();
                return [Math.round(r.width), Math.round(r.height)];
            };
            return {nav: box("header, nav")[1], badge: box("#notif-badge [data-unread]")};
        }"""
    )


def test_the_nav_bar_and_its_badge_keep_their_size_on_every_page(page, asgi_server):
    get_user_model().objects.create_user("alice", password=PASSWORD)
    log_in(page, asgi_server, "alice")
    sizes = {}
    for path in PAGES:
        response = page.goto(asgi_server.url + path)
        assert response.status == 200, path
        sizes[path] = nav_geometry(page)
    reference = sizes["/fleet/"]
    assert reference["badge"][1] < 30, reference
    assert {path: size for path, size in sizes.items() if size != reference} == {}
