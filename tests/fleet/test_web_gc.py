"""The web server leaves what start-up built out of the collector's full passes."""

import subprocess
import sys


def test_loading_the_web_application_freezes_what_start_up_built():
    probe = "import gc, fleet.asgi; print(gc.get_freeze_count())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) > 50_000
