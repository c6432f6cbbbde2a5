"""Ask the reservations calendar whether someone else has booked a run's GPUs."""

from datetime import datetime

from django.utils import formats, timezone


def booked_by_others(gpus, user, start: datetime, end: datetime) -> list[str]:
    """One message per booking of these GPUs by another researcher overlapping [start, end)."""
    try:
        from fleet.booking import conflicting_bookings
    except ImportError:  # a build without the reservations calendar: nothing is booked
        return []
    messages = []
    for booking in conflicting_bookings([gpu.pk for gpu in gpus], user, start, end):
        until = formats.date_format(timezone.localtime(booking.end), "DATETIME_FORMAT")
        messages.append(f"{booking.gpu} is booked by {booking.user.get_username()} until {until}.")
    return messages
