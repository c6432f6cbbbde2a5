"""The overlap constraint needs no extension: it works on the embedded PostgreSQL (pgserver) too."""

import os
import subprocess
import sys

from django.conf import settings

SCRIPT = """
import os
os.environ["DJANGO_SETTINGS_MODULE"] = "fleet.settings"
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from datetime import timedelta
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone
from inventory.models import GPU, Node
from reservations.models import Reservation
user = User.objects.create(username="alice")
gpu = GPU.objects.create(node=Node.objects.create(hostname="n1"), index=0, uuid="GPU-1")
start = timezone.now() + timedelta(hours=1)
Reservation.objects.create(user=user, gpu=gpu, start=start, end=start + timedelta(hours=2))
Reservation.objects.create(user=user, gpu=gpu, start=start + timedelta(hours=2), end=start + timedelta(hours=3))
try:
    with transaction.atomic():
        Reservation.objects.create(user=user, gpu=gpu, start=start + timedelta(hours=1), end=start + timedelta(hours=4))
except IntegrityError as exc:
    print("refused:", "reservation_no_overlap" in str(exc))
print("rows:", Reservation.objects.count())
"""


def test_the_embedded_postgresql_refuses_an_overlap(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL",)}
    env.update(FLEET_VAR_DIR=str(tmp_path / "var"), REDIS_URL=settings.REDIS_URL, SECRET_KEY="test")
    result = subprocess.run(
        [sys.executable, "-m", "fleet.embedded", "--", sys.executable, "-c", SCRIPT],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "started an embedded one (pgserver)" in result.stdout
    assert "refused: True" in result.stdout and "rows: 2" in result.stdout
