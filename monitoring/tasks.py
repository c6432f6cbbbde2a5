"""The monitoring app's Celery tasks, each defined beside the work it starts; Celery's autodiscovery imports this.

Every task keeps an explicit name (monitoring.tasks.*, monitoring.rollup_minutes, ...) so that queued
tasks and the beat schedule survive a move of the code.
"""

from monitoring.alerts.engine import evaluate_alerts
from monitoring.alerts.rules.idle.reclaim import reclaim_process
from monitoring.costs.rollup import rollup_usage_task
from monitoring.notify.deliver import deliver_notification
from monitoring.notify.from_events import dispatch_event_task
from monitoring.notify.held import send_held_notifications
from monitoring.processes.stopping import stop_process
from monitoring.storage.tasks import (
    enforce_retention,
    mark_offline,
    prepare_partitions,
    rollup_hours,
    rollup_minutes,
)

__all__ = [
    "deliver_notification",
    "dispatch_event_task",
    "enforce_retention",
    "evaluate_alerts",
    "mark_offline",
    "prepare_partitions",
    "reclaim_process",
    "rollup_hours",
    "rollup_minutes",
    "rollup_usage_task",
    "send_held_notifications",
    "stop_process",
]
