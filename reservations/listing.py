"""Bookings as people see them: the rows booked together, grouped, with one window and a summary."""

from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.utils import timezone

from reservations.choices import ReservationStatus
from reservations.models import Reservation


@dataclass
class Booking:
    """The GPUs one request booked: one window, one purpose, each GPU with its own status."""

    id: str
    user: object
    project: object
    start: datetime
    end: datetime
    purpose: str
    deadline_name: str
    deadline_date: date | None
    created: datetime
    rows: list[Reservation]

    @property
    def status(self) -> str:
        statuses = [row.status for row in self.rows]
        if ReservationStatus.ACTIVE in statuses:
            return ReservationStatus.ACTIVE
        return Counter(statuses).most_common(1)[0][0]

    @property
    def status_label(self) -> str:
        return ReservationStatus(self.status).label

    @property
    def colour(self) -> str:
        return ReservationStatus(self.status).colour

    @property
    def active_rows(self) -> list[Reservation]:
        return [row for row in self.rows if row.status == ReservationStatus.ACTIVE]

    @property
    def gpu_count(self) -> int:
        return len(self.rows)

    @property
    def gpu_labels(self) -> str:
        return ", ".join(str(row.gpu) for row in self.rows)

    @property
    def models(self) -> str:
        counts = Counter(row.gpu.model.name if row.gpu.model else row.gpu.name or "unknown" for row in self.rows)
        return ", ".join(f"{n}× {name}" for name, n in counts.items())

    @property
    def first_used_at(self) -> datetime | None:
        used = [row.first_used_at for row in self.rows if row.first_used_at]
        return min(used) if used else None

    @property
    def in_progress(self) -> bool:
        return self.status == ReservationStatus.ACTIVE and self.start <= timezone.now() < self.end

    @property
    def gpu_hours(self) -> float:
        return round(sum((row.end - row.start).total_seconds() for row in self.rows) / 3600, 2)


def group(rows) -> list[Booking]:
    """Rows (ordered by start) grouped by booking; the window is that of the booking's latest rows."""
    grouped: dict = {}
    for row in rows:
        grouped.setdefault(row.booking, []).append(row)
    return [as_booking(key, theirs) for key, theirs in grouped.items()]


def as_booking(key, rows: list[Reservation]) -> Booking:
    active = [row for row in rows if row.status == ReservationStatus.ACTIVE] or rows
    first = active[0]
    return Booking(
        id=str(key),
        user=first.user,
        project=first.project,
        start=first.start,
        end=max(row.end for row in active),
        purpose=first.purpose,
        deadline_name=first.deadline_name,
        deadline_date=first.deadline_date,
        created=first.created,
        rows=rows,
    )


def with_details(rows):
    return rows.select_related("user", "project", "gpu__node", "gpu__model").order_by("start", "booking", "gpu_id")


def bookings_of(user, past_days: int = 30) -> list[Booking]:
    since = timezone.now() - timedelta(days=past_days)
    return group(with_details(Reservation.objects.filter(user=user, end__gt=since)))


def booking(key) -> Booking | None:
    rows = list(with_details(Reservation.objects.filter(booking=key)))
    return as_booking(key, rows) if rows else None
