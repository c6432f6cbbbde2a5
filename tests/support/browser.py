"""Waiting on a page's state under the Content-Security-Policy, which lets no page evaluate strings.

Playwright's wait_for_function builds its predicate with eval inside the page; page.evaluate goes
through the browser's debugging protocol, which the policy does not govern.
"""

import time


def wait_until(page, expression: str, timeout_s: float = 30.0, every_s: float = 0.2) -> None:
    """Poll a JavaScript expression until it is truthy; fail with the expression after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"the page never met: {expression}"
        time.sleep(every_s)
