"""The GPUs × time calendar: bars for bookings, coloured by user or project; the gaps are the free slots.

Bars are written as HTML here rather than in the template: a four-week view of a large fleet has
thousands of them, and the template engine costs several times more per bar.
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from functools import lru_cache
from html import escape

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from fleet.localtime import as_utc
from inventory.models import GPU, Project
from reservations.choices import ReservationStatus
from reservations.models import Reservation

SHOWN = [ReservationStatus.ACTIVE, ReservationStatus.ENDED]


@dataclass
class TimelineRow:
    gpu: GPU
    bars: SafeString = mark_safe("")


@dataclass
class Timeline:
    """Rows of GPUs over [start, end) in the active time zone."""

    start: datetime
    end: datetime
    rows: list[TimelineRow]
    days: list[tuple[float, str]]
    legend: dict[str, str]
    now_left: float | None


# Twelve hues far enough apart to tell bars apart at a glance; darker shades for the next twelve names.
NO_PROJECT, GREY = "no project", "#9aa1ae"
HUES = [212, 28, 140, 350, 265, 48, 185, 310, 95, 5, 235, 160]


@lru_cache(maxsize=4096)
def colour_for(name: str) -> str:
    """A stable colour per name, so alice is the same colour on every page."""
    digest = int(hashlib.md5(name.encode()).hexdigest()[:8], 16)
    hue = HUES[digest % len(HUES)]
    lightness = 44 if (digest // len(HUES)) % 2 else 36
    return f"hsl({hue} 60% {lightness}%)"


def local_midnight(day) -> datetime:
    return as_utc(timezone.make_aware(datetime.combine(day, time.min)))


def build_timeline(first_day, days: int, viewer, colour_by: str = "user", gpus=None) -> Timeline:
    start = local_midnight(first_day)
    end = local_midnight(first_day + timedelta(days=days))
    gpus = list((gpus if gpus is not None else GPU.objects.all()).select_related("node", "model"))
    bars: dict[int, list[str]] = {gpu.id: [] for gpu in gpus}
    painter = Painter(start, end, viewer, colour_by)
    for booking in bookings_between(bars.keys(), start, end):
        bars[booking[0]].append(painter.bar(booking))
    rows = [TimelineRow(gpu, mark_safe("".join(bars[gpu.id]))) for gpu in gpus]
    now = timezone.now()
    now_left = percent(now - start, painter.span) if start <= now < end else None
    ticks = day_ticks(first_day, days, start, painter.span)
    return Timeline(start, end, rows, ticks, painter.legend, now_left)


# PostgreSQL places and labels the bars (positions, local times): for thousands of bars that is several
# times faster than turning each row into Python datetimes first.
BARS_SQL = """
SELECT r.gpu_id, r.booking::text, r.user_id, u.{username}, p.name, r.purpose, r.deadline_name, r.status,
       round((extract(epoch FROM greatest(r.start, %(start)s) - %(start)s) * %(scale)s)::numeric, 3)::text,
       greatest(round((extract(epoch FROM least(r."end", %(end)s) - greatest(r.start, %(start)s))
                       * %(scale)s)::numeric, 3), 0.15)::text,
       to_char(r.start AT TIME ZONE %(zone)s, 'Dy FMDD Mon HH24:MI'),
       to_char(r."end" AT TIME ZONE %(zone)s, 'Dy FMDD Mon HH24:MI')
FROM {reservations} r
JOIN {users} u ON u.id = r.user_id
LEFT JOIN {projects} p ON p.id = r.project_id
WHERE r.gpu_id = ANY(%(gpus)s) AND r.status = ANY(%(shown)s) AND r.start < %(end)s AND r."end" > %(start)s
ORDER BY r.gpu_id, r.start
"""


def bookings_between(gpu_ids, start: datetime, end: datetime) -> list[tuple]:
    User = get_user_model()
    sql = BARS_SQL.format(
        username=User.USERNAME_FIELD,
        users=User._meta.db_table,
        reservations=Reservation._meta.db_table,
        projects=Project._meta.db_table,
    )
    params = {
        "start": start,
        "end": end,
        "scale": 100 / (end - start).total_seconds(),
        "zone": timezone.get_current_timezone_name(),
        "gpus": list(gpu_ids),
        "shown": [str(status) for status in SHOWN],
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class Painter:
    """Turns booking rows into coloured bars and keeps the legend."""

    def __init__(self, start: datetime, end: datetime, viewer, colour_by: str):
        self.span = (end - start).total_seconds()
        self.viewer_id = viewer.pk
        self.by_project = colour_by == "project"
        self.legend: dict[str, str] = {}

    def bar(self, row) -> str:
        _, booking, user_id, who, project, purpose, deadline, status, left, width, since, until = row
        key = (project or NO_PROJECT) if self.by_project else who
        colour = self.legend.setdefault(key, GREY if key == NO_PROJECT else colour_for(key))
        mine = " mine" if user_id == self.viewer_id else ""
        parts = [who, project, f"{since} – {until}", purpose, f"for {deadline}" if deadline else ""]
        if status != ReservationStatus.ACTIVE:
            parts.append(ReservationStatus(status).label.lower())
        title = escape(" · ".join(part for part in parts if part))
        return (
            f'<a class="tl-bar{mine}" href="/reservations/{booking}/" data-css-left="{left}%" '
            f'data-css-width="{width}%" data-css-background="{colour}" title="{title}">{escape(who)}</a>'
        )


def percent(offset: timedelta, span: float) -> float:
    return round(100 * offset.total_seconds() / span, 3)


def day_ticks(first_day, days: int, start: datetime, span: float) -> list[tuple[float, str]]:
    # Real offsets, not day × 1/days: a day with a DST switch is 23 or 25 hours long.
    ticks = []
    for n in range(days):
        day = first_day + timedelta(days=n)
        ticks.append((percent(local_midnight(day) - start, span), day.strftime("%a %-d %b")))
    return ticks
