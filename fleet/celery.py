"""The Celery app: the default queue for central work, `node.<hostname>` queues for node workers."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")

from fleet.startup import setup_django  # noqa: E402

setup_django()

app = Celery("fleet")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def node_queue(hostname: str) -> str:
    return f"node.{hostname}"
