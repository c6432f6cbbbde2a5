"""In a real browser: a researcher sees their alert, and the notification badge counts up live when a new one lands."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from monitoring.notify.from_events import dispatch_event
from tests.conftest import PASSWORD, log_in
from tests.support.alerts import open_alert
from tests.support.browser import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def notify(owner, title: str):
    """Open an alert and deliver it, as the worker would: in a thread of its own, since Playwright's loop runs here."""

    def work():
        try:
            alert = open_alert(owner=owner, title=title)
            dispatch_event(alert.events.get().pk)  # the in-app notification is broadcast after commit
            return alert
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


def test_the_badge_counts_up_live_and_the_alert_is_listed(page, asgi_server):
    alice = get_user_model().objects.create_user("alice", password=PASSWORD)
    bob = get_user_model().objects.create_user("bob", password=PASSWORD)
    notify(alice, "Idle python (pid 4242) on gpu-01 GPU 0")
    notify(bob, "Idle python (pid 77) on gpu-02 GPU 1")

    log_in(page, asgi_server, "alice")
    page.goto(asgi_server.url + "/alerts/")
    assert page.locator("h1").inner_text() == "Alerts"
    assert page.get_by_text("Idle python (pid 4242) on gpu-01 GPU 0").is_visible()
    assert page.get_by_text("pid 77").count() == 0
    badge = page.locator("#notif-badge [data-unread]")
    assert badge.inner_text() == "1"
    page.wait_for_selector("#notif-badge[data-live='1']")

    notify(alice, "Idle python (pid 5151) on gpu-01 GPU 2")
    wait_until(page, "document.querySelector('#notif-badge [data-unread]')?.textContent === '2'")

    page.goto(asgi_server.url + "/notifications/")
    page.click("[data-action=read-all]")
    page.wait_for_selector("#notif-badge [data-unread].empty")
    assert badge.inner_text() == "0"


def test_acknowledging_from_the_alert_page(page, asgi_server):
    alice = get_user_model().objects.create_user("alice", password=PASSWORD)
    alert = notify(alice, "Idle python (pid 4242) on gpu-01 GPU 0")
    log_in(page, asgi_server, "alice")
    page.goto(f"{asgi_server.url}/alerts/{alert.pk}/")
    page.click("[data-action=acknowledge]")
    page.wait_for_selector("text=Acknowledged.")
    assert page.locator("[data-status]").inner_text() == "Acknowledged"
