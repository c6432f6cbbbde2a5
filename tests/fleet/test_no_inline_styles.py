"""The Content-Security-Policy (style-src 'self') refuses inline styles, so none is written: not in a
template, not in HTML built in Python. The browser test (tests/e2e/test_content_security_policy.py)
visits the main pages; this covers every page and fragment."""

import re
from pathlib import Path

from tests.support.packages import PACKAGES

ROOT = Path(__file__).resolve().parents[2]
INLINE_STYLE = re.compile(r"""<style[\s>]|\sstyle\s*=\s*["']""", re.IGNORECASE)


def sources():
    yield from (ROOT / "templates").rglob("*.html")
    for package in PACKAGES:
        yield from (ROOT / package).rglob("*.py")


def test_no_template_or_module_writes_an_inline_style():
    found = [str(path.relative_to(ROOT)) for path in sources() if INLINE_STYLE.search(path.read_text())]

    assert found == [], "use static/css, or data-css-* attributes (static/js/sizes.js)"
