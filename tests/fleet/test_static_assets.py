"""The browser loads plotly.js from our own static/, never from a CDN."""

from pathlib import Path

import plotly

STATIC_PLOTLY = Path(__file__).resolve().parents[2] / "static" / "js" / "plotly.min.js"


def test_static_plotly_is_the_one_the_plotly_package_ships():
    shipped = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert STATIC_PLOTLY.read_bytes() == shipped.read_bytes(), (
        "static/js/plotly.min.js differs from the plotly package's; copy it again after upgrading plotly"
    )


def test_templates_load_no_script_from_another_host():
    templates = Path(__file__).resolve().parents[2] / "templates"
    for template in templates.rglob("*.html"):
        text = template.read_text()
        assert 'src="http' not in text and "src='http" not in text and "//cdn" not in text, template
