"""The GPUs × time calendar: bars for bookings, coloured by user or project; the gaps are the free slots."""

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta

from django.utils import timezone

from fleet.choices import ReservationStatus
from fleet.localtime import as_utc
from fleet.models import GPU, Reservation

SHOWN = [ReservationStatus.ACTIVE, ReservationStatus.ENDED]
TIME_FORMAT = "%a %-d %b %H:%M"


@dataclass
class Bar:
    """One booking of one GPU, placed in percent of the row's width."""

    left: float
    width: float
    label: str
    title: str
    colour: str
    booking: str
    mine: bool


@dataclass
class TimelineRow:
    gpu: GPU
    bars: list[Bar] = field(default_factory=list)


@dataclass
class Timeline:
    """Rows of GPUs over [start, end) in the active time zone."""

    start: datetime
    end: datetime
    rows: list[TimelineRow]
    days: list[tuple[float, str]]
    legend: dict[str, str]
    now_left: float | None


def colour_for(name: str) -> str:
    """A stable colour per name, so alice is the same colour on every page."""
    hue = int(hashlib.md5(name.encode()).hexdigest()[:6], 16) % 360
    return f"hsl({hue} 55% 48%)"


def local_midnight(day) -> datetime:
    return as_utc(timezone.make_aware(datetime.combine(day, time.min)))


def build_timeline(first_day, days: int, viewer, colour_by: str = "user", gpus=None) -> Timeline:
    start = local_midnight(first_day)
    end = local_midnight(first_day + timedelta(days=days))
    gpus = list((gpus if gpus is not None else GPU.objects.all()).select_related("node", "model"))
    rows = {gpu.id: TimelineRow(gpu) for gpu in gpus}
    legend = {}
    span = (end - start).total_seconds()
    for booking in bookings_between(rows.keys(), start, end):
        bar = place(booking, start, end, span, viewer, colour_by, legend)
        rows[booking.gpu_id].bars.append(bar)
    now = timezone.now()
    now_left = percent(now - start, span) if start <= now < end else None
    return Timeline(start, end, list(rows.values()), day_ticks(first_day, days, start, span), legend, now_left)


def bookings_between(gpu_ids, start: datetime, end: datetime):
    return (
        Reservation.objects.filter(gpu_id__in=list(gpu_ids), status__in=SHOWN, start__lt=end, end__gt=start)
        .select_related("user", "project")
        .order_by("gpu_id", "start")
    )


def place(row: Reservation, start, end, span: float, viewer, colour_by: str, legend: dict) -> Bar:
    who = row.user.get_username()
    key = row.project.name if colour_by == "project" and row.project else who
    if colour_by == "project" and not row.project:
        key = "no project"
    colour = legend.setdefault(key, colour_for(key))
    left = percent(max(row.start, start) - start, span)
    right = percent(min(row.end, end) - start, span)
    return Bar(
        left=left,
        width=max(right - left, 0.15),
        label=who,
        title=describe(row, who),
        colour=colour,
        booking=str(row.booking),
        mine=row.user_id == viewer.pk,
    )


def describe(row: Reservation, who: str) -> str:
    local_start, local_end = timezone.localtime(row.start), timezone.localtime(row.end)
    parts = [who, f"{local_start.strftime(TIME_FORMAT)} – {local_end.strftime(TIME_FORMAT)}"]
    if row.project:
        parts.insert(1, row.project.name)
    if row.purpose:
        parts.append(row.purpose)
    if row.deadline_name:
        parts.append(f"for {row.deadline_name}")
    if row.status != ReservationStatus.ACTIVE:
        parts.append(row.get_status_display().lower())
    return " · ".join(parts)


def percent(offset: timedelta, span: float) -> float:
    return round(100 * offset.total_seconds() / span, 3)


def day_ticks(first_day, days: int, start: datetime, span: float) -> list[tuple[float, str]]:
    # Real offsets, not day × 1/days: a day with a DST switch is 23 or 25 hours long.
    ticks = []
    for n in range(days):
        day = first_day + timedelta(days=n)
        ticks.append((percent(local_midnight(day) - start, span), day.strftime("%a %-d %b")))
    return ticks
