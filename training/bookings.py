"""Ask the reservations calendar whether someone else has booked a run's GPUs."""

from datetime import datetime

from django.utils import formats, timezone

from fleet.booking import conflicting_bookings


def _local(moment: datetime) -> str:
    return formats.date_format(timezone.localtime(moment), "Y-m-d H:i T")


def booked_by_others(gpus, user, start: datetime, end: datetime) -> list[str]:
    """One message per booking of these GPUs by another researcher overlapping [start, end)."""
    return [
        f"{booking.gpu} is booked by {booking.user.get_username()} from {_local(booking.start)} "
        f"to {_local(booking.end)}."
        for booking in conflicting_bookings([gpu.pk for gpu in gpus], user, start, end)
    ]
