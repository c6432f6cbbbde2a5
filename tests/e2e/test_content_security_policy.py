"""Under the site's strict Content-Security-Policy every main page loads and runs without one violation,
wide and narrow: no inline script and no inline style."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from monitoring.costs.models import UserBudget
from tests.conftest import log_in
from tests.support.alerts import open_alert
from tests.support.gpus import set_state
from tests.support.reservations import booked, make_fleet
from training.models import Run, Sweep

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Elements sized or coloured at render time (data-css-*), and those of them static/js/sizes.js left bare.
SIZED = """() => {
    const properties = ["width", "left", "background"];
    const sized = [...document.querySelectorAll(properties.map((p) => `[data-css-${p}]`).join(","))];
    const unset = (el, p) => el.hasAttribute(`data-css-${p}`) && !el.style.getPropertyValue(p);
    const bare = sized.filter((el) => properties.some((p) => unset(el, p)));
    return {sized: sized.length, bare: bare.map((el) => el.outerHTML.slice(0, 120))};
}"""

VIEWPORTS = {"wide": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}


def watch_violations(page) -> list[str]:
    """Every CSP violation the browser reports, from the console and from `securitypolicyviolation` events."""
    seen: list[str] = []
    page.on("console", lambda msg: seen.append(msg.text) if "Content Security Policy" in msg.text else None)
    # The event names the directive, the file and line, and the start of what was blocked.
    page.add_init_script(
        """document.addEventListener("securitypolicyviolation", (e) => console.error(
            "Content Security Policy violation: " + e.violatedDirective + " " + e.blockedURI + " " +
            e.sourceFile + ":" + e.lineNumber + " " + (e.sample || "")))"""
    )
    return seen


def pages_to_visit(cast) -> list[str]:
    """The main pages, with data on them that draws what is sized or coloured at render time: a booking on
    the timeline, a budget's bar on the costs page, a GPU's memory meter, a sweep's chart."""
    gpus = make_fleet()
    gpu = gpus[0]
    gpu.memory_total_mib = 81559
    gpu.save()
    set_state(gpu, mem_used_mib=30000, last_sample_at=timezone.now())
    booked(cast["owner"], [gpu], 1, 3)
    UserBudget.objects.create(user=cast["owner"], monthly_budget=Decimal("100"))
    alert = open_alert(owner=cast["owner"])
    runs = [
        Run.objects.create(owner=cast["owner"], name=f"r{n}", workload="digits_cnn", strategy="single")
        for n in range(2)
    ]
    sweep = Sweep.objects.create(
        owner=cast["owner"], name="lr", workload="digits_cnn", mode="grid", space={"lr": [0.1, 0.01]}
    )
    return [
        "/fleet/",
        f"/fleet/nodes/{gpu.node.hostname}/",
        f"/fleet/gpus/{gpu.uuid}/",
        "/reservations/",
        f"/reservations/?start={(timezone.now() - timedelta(days=1)).date()}",
        "/reservations/book/",
        "/reservations/mine/",
        "/runs/",
        "/runs/new/",
        f"/runs/{runs[0].pk}/",
        f"/runs/compare/?run={runs[0].pk}&run={runs[1].pk}",
        "/sweeps/new/",
        f"/sweeps/{sweep.pk}/",
        "/processes/",
        "/alerts/",
        f"/alerts/{alert.pk}/",
        "/alerts/settings/",
        "/alerts/silences/",
        "/notifications/",
        "/costs/",
        "/settings/tokens/",
        "/api/docs/",
        "/admin/",
    ]


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_no_page_breaks_the_content_security_policy(browser, asgi_server, cast, gpu_models, viewport):
    context = browser.new_context(viewport=VIEWPORTS[viewport])
    page = context.new_page()
    page.set_default_timeout(45_000)
    violations = watch_violations(page)
    response = page.goto(asgi_server.url + "/login/")
    directives = dict(
        (part.strip().split(" ", 1) + [""])[:2] for part in response.headers["content-security-policy"].split(";")
    )
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'", directives
    # The data first: a Fleet page open while GPUs are added reloads itself (new inventory), which would
    # interrupt the next navigation.
    paths = pages_to_visit(cast)
    log_in(page, asgi_server, "root")
    failed, broken, bare, sized = {}, {}, {}, 0
    for path in paths:
        # Generous: the machine may be busy, and the chart pages load plotly.js (3.5 MB) before "load".
        response = page.goto(asgi_server.url + path, wait_until="load", timeout=120_000)
        if response.status != 200:
            failed[path] = response.status
        page.wait_for_timeout(300)  # let the page's scripts draw what they draw after load
        if violations:
            broken[path] = list(violations)
            violations.clear()
        found = page.evaluate(SIZED)
        sized += found["sized"]
        if found["bare"]:
            bare[path] = found["bare"]
    context.close()
    assert failed == {}
    assert sized > 10 and bare == {}, bare
    assert broken == {}, "\n".join(f"{path}: {line}" for path, lines in broken.items() for line in lines)


def test_an_inline_script_would_be_refused(page, asgi_server, cast):
    """The policy is really enforced: a script injected inline (as an XSS would be) does not run."""
    page.goto(asgi_server.url + "/login/")
    with page.expect_console_message(lambda msg: "Content Security Policy" in msg.text, timeout=30_000):
        page.evaluate(
            """() => { const s = document.createElement("script"); s.textContent = "window.injected = 1";
                       document.body.appendChild(s); }"""
        )
    assert page.evaluate("window.injected") is None


def test_an_inline_style_would_be_refused(page, asgi_server, cast):
    """And so is a style attribute in markup (an injected one could hide or overlay parts of a page)."""
    page.goto(asgi_server.url + "/login/")
    with page.expect_console_message(lambda msg: "Content Security Policy" in msg.text, timeout=30_000):
        page.evaluate(
            """() => { const d = document.createElement("div"); d.id = "injected";
                       d.innerHTML = '<p style="display: none">x</p>'; document.body.appendChild(d); }"""
        )
    assert page.evaluate("getComputedStyle(document.querySelector('#injected p')).display") == "block"
