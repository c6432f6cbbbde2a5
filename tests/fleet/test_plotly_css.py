"""Plotly's styles come from static files, since the Content-Security-Policy refuses the inline <style>s
plotly.js would add; the files match the plotly.js the pages load, and the pages link them under the ids
plotly.js looks for."""

from pathlib import Path

from tests.support.plotly_css import MAPS_CSS, PLOTLY_CSS, PLOTLY_JS, maps_style, plotly_rules, stylesheet

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
REWRITE = "run: python -m tests.support.plotly_css"


def test_the_stylesheets_hold_what_the_plotly_js_the_pages_load_would_inject():
    script = PLOTLY_JS.read_text()

    assert len(plotly_rules(script)) > 50
    assert PLOTLY_CSS.read_text() == stylesheet(script), REWRITE
    assert ".js-plotly-plot .plotly .main-svg { position:absolute;" in PLOTLY_CSS.read_text()
    assert MAPS_CSS.read_text() == maps_style(script)[1], REWRITE


def test_chart_pages_link_them_under_the_ids_plotly_js_checks_before_injecting_its_own():
    script = PLOTLY_JS.read_text()
    include = (TEMPLATES / "_plotly.html").read_text()

    assert 'matches(".no-inline-styles")' in script
    assert 'id="plotly.js-style-global" class="no-inline-styles"' in include
    assert f'id="{maps_style(script)[0]}"' in include
    assert include.index("<link") < include.index("<script")
    pages = [path for path in TEMPLATES.rglob("*.html") if "js/plotly.min.js" in path.read_text()]
    assert pages == [TEMPLATES / "_plotly.html"], "load plotly.js through _plotly.html"
