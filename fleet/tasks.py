"""The fleet app's Celery tasks, each defined beside the work it starts; Celery's autodiscovery imports this module."""

from fleet.reservations.watch import watch_reservations_task

__all__ = ["watch_reservations_task"]
