"""static/css/plotly.css and plotly-maps.css: what plotly.js would inject as inline <style>s, as stylesheets.

Under the site's Content-Security-Policy (style-src 'self') an inline <style> is refused. plotly.js adds
two: its own rules, skipped when the page has an element with id "plotly.js-style-global" and the class
"no-inline-styles", and its bundled MapLibre's, skipped when an element with MapLibre's id exists.
templates/_plotly.html links both files under those ids before loading plotly.js. After upgrading
static/js/plotly.min.js, rewrite them: `python -m tests.support.plotly_css`.
"""

import re
from pathlib import Path

STATIC = Path(__file__).resolve().parents[2] / "static"
PLOTLY_JS = STATIC / "js" / "plotly.min.js"
PLOTLY_CSS = STATIC / "css" / "plotly.css"
MAPS_CSS = STATIC / "css" / "plotly-maps.css"
# The rules object in plotly.min.js (src/css/_*.scss compiled into build/plotcss.js) starts with this key.
FIRST_KEY = '{"X,X div":'
KEY = r'(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[A-Za-z_$][\w$]*))'
VALUE = r"""(?:'(?P<single>(?:[^'\\]|\\.)*)'|"(?P<double>(?:[^"\\]|\\.)*)")"""
PAIR = re.compile(f"{KEY}:{VALUE}")


HEADER = "/* Generated from static/js/plotly.min.js by `python -m tests.support.plotly_css`; do not edit. */"
MAPS_STYLE = re.compile(
    r'if\(!document\.getElementById\("(?P<id>[0-9a-f]{64})"\)\)\{var (?P<v>\w)=document\.createElement\("style"\);'
    r"(?P=v)\.id=\"(?P=id)\",(?P=v)\.textContent='(?P<css>(?:[^'\\]|\\.)*)'"
)


def plotly_rules(script: str) -> list[tuple[str, str]]:
    """(selector, declarations) in the order plotly.js defines them, its X and Y placeholders replaced."""
    pos = script.index(FIRST_KEY) + 1
    rules = []
    while script[pos] != "}":
        match = PAIR.match(script, pos)
        if match is None:
            raise ValueError(f"unexpected text in plotly.js's rules: {script[pos : pos + 80]!r}")
        key = match["quoted"] if match["quoted"] is not None else match["bare"]
        value = match["single"] if match["single"] is not None else match["double"]
        selector = re.sub(r"^,", " ,", key).replace("X", ".js-plotly-plot .plotly").replace("Y", ".plotly-notifier")
        rules.append((selector, value))
        pos = match.end() + (script[match.end()] == ",")
    return rules


def stylesheet(script: str) -> str:
    # plotly.js inserts each rule at index 0 of its sheet, so the last one defined comes first.
    lines = [f"{selector} {{ {value} }}" for selector, value in reversed(plotly_rules(script))]
    return "\n".join([HEADER, *lines]) + "\n"


def maps_style(script: str) -> tuple[str, str]:
    """The id MapLibre's <style> takes, and its text."""
    match = MAPS_STYLE.search(script)
    if match is None:
        raise ValueError("MapLibre's inline <style> is not where it was in plotly.js")
    return match["id"], f"{HEADER}\n{match['css']}\n"


if __name__ == "__main__":
    script = PLOTLY_JS.read_text()
    PLOTLY_CSS.write_text(stylesheet(script))
    MAPS_CSS.write_text(maps_style(script)[1])
