"""The web server leaves what start-up built out of the collector's full passes, and lets the ingest's
short-lived objects die before the collector looks at them."""

import ast
import subprocess
import sys


def test_loading_the_web_application_freezes_what_start_up_built():
    probe = "import gc, fleet.asgi; print(gc.get_freeze_count())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) > 50_000


def test_the_web_server_collects_its_young_objects_in_tens_of_thousands():
    """A flush's objects (a few per sample, alive for tens of ms) outnumber the default young generation of 700."""
    probe = "import gc; print(gc.get_threshold()); import fleet.asgi; print(gc.get_threshold())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    before, after = (ast.literal_eval(line) for line in out.stdout.splitlines()[-2:])
    assert before == (700, 10, 10)
    assert after[0] >= 10_000 and after[2] > before[2]
