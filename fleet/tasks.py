"""Periodic fleet work for the central worker."""

import logging

from celery import shared_task

from fleet.reservation_watch import watch_reservations

log = logging.getLogger(__name__)


@shared_task(name="fleet.watch_reservations", soft_time_limit=50, time_limit=55, ignore_result=True)
def watch_reservations_task() -> dict:
    """Each minute: end finished bookings, note first use, release no-shows, record squatting, send emails."""
    report = watch_reservations()
    if report.released or report.squatting:
        log.info("reservations: %s", report)
    return report.__dict__
