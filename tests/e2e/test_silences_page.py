"""In a real browser, at 1440 px and 390 px: an admin silences a node's idle-process alerts of one owner through
the form, sees the silence listed with its end in their own zone (named), and expires it; a researcher cannot
open the page and sees silences on the Alerts page only, without a way to manage them."""

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.utils.dateformat import format as date_format

from monitoring.alerts import silences
from monitoring.alerts.choices import AlertKind
from monitoring.alerts.models import Silence
from tests.conftest import PASSWORD, log_in
from tests.support.telemetry import add_gpu

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TOKYO = "Asia/Tokyo"  # the browser's zone, far from the server's UTC: a time shown in UTC would not match


@pytest.fixture
def people(gpu_models):
    User = get_user_model()
    add_gpu("gpu-01", 0)
    return {
        "alice": User.objects.create_user("alice", password=PASSWORD),
        "root": User.objects.create_user("root", password=PASSWORD, is_staff=True),
    }


def page_at(browser, width: int):
    context = browser.new_context(viewport={"width": width, "height": 900}, timezone_id=TOKYO)
    page = context.new_page()
    page.set_default_timeout(30_000)
    return page


def fits(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("width", [1440, 390])
def test_an_admin_adds_a_silence_sees_it_in_their_zone_and_expires_it(browser, asgi_server, people, width):
    page = page_at(browser, width)
    log_in(page, asgi_server, "root")
    page.goto(asgi_server.url + "/alerts/silences/", wait_until="domcontentloaded")
    assert page.locator("h1").inner_text() == "Silences"
    assert fits(page)

    page.select_option("#id_node", label="gpu-01")
    page.select_option("#id_user", label="alice")
    page.select_option("#id_kind", value=AlertKind.IDLE_PROCESS)
    page.fill("#id_duration", "2h")
    page.fill("#id_reason", "Driver upgrade on gpu-01")
    with page.expect_navigation(wait_until="domcontentloaded"):
        page.click("form[data-form=silence] button")

    silence = Silence.objects.get()
    assert (silence.node.hostname, silence.user.username, silence.kind) == ("gpu-01", "alice", AlertKind.IDLE_PROCESS)
    assert 7190 <= (silence.ends_at - silence.starts_at).total_seconds() <= 7200
    ends = date_format(silence.ends_at.astimezone(ZoneInfo(TOKYO)), "d M H:i")
    row = page.locator(f"[data-silence='{silence.pk}']")
    assert row.count() == 1
    text = row.inner_text()
    assert f"{ends} JST" in text, text  # the viewer's zone, named
    assert "node gpu-01, user alice, rule Idle process" in text and "Driver upgrade on gpu-01" in text
    assert fits(page), "the page scrolls sideways with a silence listed"

    with page.expect_navigation(wait_until="domcontentloaded"):
        row.get_by_role("button", name="Expire").click()
    silence.refresh_from_db()
    assert not silence.is_active()
    assert page.get_by_text("has ended").is_visible()
    active = page.locator("section.card", has=page.locator("h2", has_text="Active"))
    assert active.get_by_text("None.").is_visible()
    ended = page.locator("section.card", has=page.locator("h2", has_text="Ended in the last 7 days"))
    assert ended.locator(f"[data-silence='{silence.pk}']").count() == 1
    assert fits(page)


def test_a_researcher_cannot_manage_silences(browser, asgi_server, people):
    silences.create(by=people["root"], duration=timedelta(days=1), reason="Fixing the loader", user=people["alice"])
    page = page_at(browser, 390)
    log_in(page, asgi_server, "alice")
    response = page.goto(asgi_server.url + "/alerts/silences/", wait_until="domcontentloaded")
    assert response.status == 403
    page.goto(asgi_server.url + "/alerts/", wait_until="domcontentloaded")
    assert page.locator("[data-silences]").get_by_text("Fixing the loader").is_visible()  # shown, read-only
    assert page.get_by_role("link", name="Silences").count() == 0
    assert page.get_by_role("link", name="Manage silences").count() == 0
    assert fits(page)
