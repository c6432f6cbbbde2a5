"""Under the site's strict Content-Security-Policy every main page loads and runs without one violation."""

import pytest

from tests.conftest import log_in
from tests.support.alerts import open_alert
from tests.support.reservations import make_fleet
from training.models import Run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def watch_violations(page) -> list[str]:
    """Every CSP violation the browser reports, from the console and from `securitypolicyviolation` events."""
    seen: list[str] = []
    page.on("console", lambda msg: seen.append(msg.text) if "Content Security Policy" in msg.text else None)
    page.add_init_script(
        """document.addEventListener("securitypolicyviolation", (e) => console.error(
            "Content Security Policy violation: " + e.violatedDirective + " " + e.blockedURI + " " + e.sourceFile))"""
    )
    return seen


def pages_to_visit(cast) -> list[str]:
    gpu = make_fleet()[0]
    alert = open_alert(owner=cast["owner"])
    runs = [
        Run.objects.create(owner=cast["owner"], name=f"r{n}", workload="digits_cnn", strategy="single")
        for n in range(2)
    ]
    return [
        "/fleet/",
        f"/fleet/nodes/{gpu.node.hostname}/",
        f"/fleet/gpus/{gpu.uuid}/",
        "/reservations/",
        "/reservations/book/",
        "/runs/",
        "/runs/new/",
        f"/runs/{runs[0].pk}/",
        f"/runs/compare/?run={runs[0].pk}&run={runs[1].pk}",
        "/alerts/",
        f"/alerts/{alert.pk}/",
        "/alerts/settings/",
        "/notifications/",
        "/costs/",
        "/settings/tokens/",
        "/api/docs/",
        "/admin/",
    ]


def test_no_page_breaks_the_content_security_policy(page, asgi_server, cast, gpu_models):
    violations = watch_violations(page)
    response = page.goto(asgi_server.url + "/login/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    log_in(page, asgi_server, "root")
    failed = {}
    for path in pages_to_visit(cast):
        # Generous: the machine may be busy, and the chart pages load plotly.js (3.5 MB) before "load".
        response = page.goto(asgi_server.url + path, wait_until="load", timeout=120_000)
        if response.status != 200:
            failed[path] = response.status
    assert failed == {}
    assert violations == []


def test_an_inline_script_would_be_refused(page, asgi_server, cast):
    """The policy is really enforced: a script injected inline (as an XSS would be) does not run."""
    page.goto(asgi_server.url + "/login/")
    with page.expect_console_message(lambda msg: "Content Security Policy" in msg.text, timeout=30_000):
        page.evaluate(
            """() => { const s = document.createElement("script"); s.textContent = "window.injected = 1";
                       document.body.appendChild(s); }"""
        )
    assert page.evaluate("window.injected") is None
