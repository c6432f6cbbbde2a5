"""Every process sends tasks through the configured broker, whatever it happened to import first."""

import subprocess
import sys

from django.conf import settings

from tests.support.processes import process_environment

PROBE = """
from fleet.startup import setup_django
setup_django()
from reservations.watch import watch_reservations_task
print(watch_reservations_task.app.main, watch_reservations_task.app.conf.broker_url)
"""


def test_a_task_module_imported_alone_uses_the_fleet_app_and_its_broker(db):
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=process_environment(),
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["fleet", settings.CELERY_BROKER_URL]
