"""The reservations app's Celery tasks, each defined beside its work; Celery's autodiscovery imports this module."""

from reservations.watch import watch_reservations_task

__all__ = ["watch_reservations_task"]
