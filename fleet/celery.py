"""The Celery app: the default queue for central work, `node.<hostname>` queues for node workers.

Loaded by fleet/__init__.py, so that every process of the project (web, workers, beat) sends tasks
through the broker the settings name, never Celery's built-in default.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")

app = Celery("fleet")
app.config_from_object("fleet.celery_settings:settings", namespace="CELERY")
app.autodiscover_tasks()


def node_queue(hostname: str) -> str:
    return f"node.{hostname}"
