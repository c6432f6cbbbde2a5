"""A researcher's bookings as an iCalendar feed (RFC 5545): UTC times, escaped text, folded lines."""

from datetime import UTC, datetime

from inventory.node_tokens import hash_token, new_token
from reservations.choices import ReservationStatus
from reservations.listing import Booking
from reservations.models import CalendarFeed

CONFIRMED = {ReservationStatus.ACTIVE, ReservationStatus.ENDED}


def utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def escape(text: str) -> str:
    """TEXT values: backslash, semicolon, comma and newlines are escaped (RFC 5545 3.3.11)."""
    text = text.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
    return text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")


def fold(line: str) -> str:
    """Lines longer than 75 octets continue on the next line after CRLF and a space, never inside a character."""
    out, current = [], b""
    for char in line:
        encoded = char.encode()
        if len(current) + len(encoded) > (75 if not out else 74):
            out.append(current)
            current = b""
        current += encoded
    out.append(current)
    return "\r\n ".join(part.decode() for part in out)


def event(booking: Booking, stamp: datetime) -> list[str]:
    summary = f"GPU booking: {booking.models}"
    description = [f"GPUs: {booking.gpu_labels}"]
    if booking.purpose:
        description.append(f"Purpose: {booking.purpose}")
    if booking.deadline_name:
        deadline = f" ({booking.deadline_date:%Y-%m-%d})" if booking.deadline_date else ""
        description.append(f"Deadline: {booking.deadline_name}{deadline}")
    description.append(f"Status: {booking.status_label}")
    return [
        "BEGIN:VEVENT",
        f"UID:{booking.id}@gpu-fleet",
        f"DTSTAMP:{utc(stamp)}",
        f"DTSTART:{utc(booking.start)}",
        f"DTEND:{utc(booking.end)}",
        f"SUMMARY:{escape(summary)}",
        f"DESCRIPTION:{escape(chr(10).join(description))}",
        f"STATUS:{'CONFIRMED' if booking.status in CONFIRMED else 'CANCELLED'}",
        "END:VEVENT",
    ]


def calendar(bookings: list[Booking], owner: str, stamp: datetime) -> str:
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//GPU Fleet//Reservations//EN",
        "CALSCALE:GREGORIAN",
        f"X-WR-CALNAME:{escape(f'GPU bookings of {owner}')}",
    ]
    for booking in bookings:
        lines += event(booking, stamp)
    lines.append("END:VCALENDAR")
    return "".join(fold(line) + "\r\n" for line in lines)


def issue_feed_token(user) -> str:
    """A new secret calendar address for the user; the old one stops working."""
    token = new_token()
    CalendarFeed.objects.update_or_create(user=user, defaults={"token_hash": hash_token(token)})
    return token


def feed_owner(token: str):
    if not token or len(token) > 100:
        return None
    feed = CalendarFeed.objects.filter(token_hash=hash_token(token)).select_related("user").first()
    return feed.user if feed and feed.user.is_active else None
