"""Quotas and fairness: weekly GPU-hour limits, the longest booking, and deadline windows that tighten both."""

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import DurationField, F, Q, Sum, Value
from django.db.models.functions import Greatest, Least
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from fleet.localtime import weeks_between, when
from inventory.models import Project
from reservations.choices import ReservationStatus
from reservations.models import DeadlineWindow, QuotaPolicy, Reservation

# Hours that were or will be held count against a quota; cancelled, released and preempted ones don't.
COUNTED = [ReservationStatus.ACTIVE, ReservationStatus.ENDED]


class QuotaError(Exception):
    """A booking outside the rules, with a message for the researcher and the form field to blame."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


def strictest(*limits: int | None) -> int | None:
    given = [limit for limit in limits if limit is not None]
    return min(given) if given else None


@dataclass
class Limits:
    """The limits that apply to one booking window: the policy, tightened by every deadline window it touches."""

    user_gpu_hours_per_week: int | None
    project_gpu_hours_per_week: int | None
    longest_booking_hours: int | None
    furthest_ahead_days: int
    deadlines: list[DeadlineWindow] = field(default_factory=list)


def limits_for(start: datetime, end: datetime) -> Limits:
    policy, upcoming = rules()
    windows = [w for w in upcoming if w.opens < end and start < w.deadline]
    return Limits(
        user_gpu_hours_per_week=strictest(
            policy.user_gpu_hours_per_week, *(w.user_gpu_hours_per_week for w in windows)
        ),
        project_gpu_hours_per_week=strictest(
            policy.project_gpu_hours_per_week, *(w.project_gpu_hours_per_week for w in windows)
        ),
        longest_booking_hours=strictest(policy.longest_booking_hours, *(w.longest_booking_hours for w in windows)),
        furthest_ahead_days=policy.furthest_ahead_days,
        deadlines=windows,
    )


# Every booking reads the rules; they change a few times a year. Each process keeps them for a few
# seconds (saving two queries per booking); a change made in this process applies at once.
RULES_TTL_S = 5.0
_rules: dict = {}


def rules() -> tuple[QuotaPolicy, list[DeadlineWindow]]:
    """The policy and the deadline windows not yet past."""
    cached = _rules.get("rules")
    if cached is None or time.monotonic() - cached[0] > RULES_TTL_S:
        upcoming = list(DeadlineWindow.objects.filter(deadline__gt=timezone.now() - timedelta(days=1)))
        cached = (time.monotonic(), (QuotaPolicy.current(), upcoming))
        _rules["rules"] = cached
    return cached[1]


@receiver([post_save, post_delete], sender=QuotaPolicy)
@receiver([post_save, post_delete], sender=DeadlineWindow)
def forget_rules(**kwargs) -> None:
    _rules.clear()


def check_rules(start: datetime, end: datetime, now: datetime, limits: Limits, deadline_name: str) -> None:
    """The longest booking, how far ahead, and naming the deadline inside a deadline window."""
    if limits.longest_booking_hours is not None and end - start > timedelta(hours=limits.longest_booking_hours):
        raise QuotaError(
            f"A booking may last at most {limits.longest_booking_hours} hours{deadline_note(limits)}; "
            f"this one lasts {hours_text(end - start)}.",
            field="end",
        )
    if start > now + timedelta(days=limits.furthest_ahead_days):
        raise QuotaError(f"Bookings may start at most {limits.furthest_ahead_days} days ahead.", field="start")
    if limits.deadlines and not deadline_name.strip():
        window = limits.deadlines[0]
        raise QuotaError(
            f"{when(window.opens)} to {when(window.deadline)} is the {window.name} deadline window: "
            "name the deadline this booking is for.",
            field="deadline_name",
        )


def check_weekly(
    user,
    project: Project | None,
    start: datetime,
    end: datetime,
    gpu_count: int,
    limits: Limits,
    exclude_booking=None,
) -> None:
    """Refuse a booking that would take the researcher or the project past a weekly GPU-hour limit."""
    scopes = [("you", Q(user=user), limits.user_gpu_hours_per_week)]
    if project is not None:
        scopes.append((f"project {project.name}", Q(project=project), limits.project_gpu_hours_per_week))
    for monday, next_monday in weeks_between(start, end):
        added = (min(end, next_monday) - max(start, monday)) * gpu_count
        for who, scope, limit in scopes:
            if limit is None:
                continue
            total = booked_in(scope, monday, next_monday, exclude_booking) + added
            if total > timedelta(hours=limit):
                raise weekly_error(who, total, limit, monday, limits)


def weekly_error(who: str, total: timedelta, limit: int, monday: datetime, limits: Limits) -> QuotaError:
    return QuotaError(
        f"That would bring {who} to {hours_text(total)} of {limit} GPU-hours in the week of "
        f"{timezone.localtime(monday):%a %-d %b}{deadline_note(limits)}.",
        field="end",
    )


@dataclass
class Room:
    """One weekly limit a new booking must keep: a researcher's (user_id) or a project's (project_id),
    and the booking's share of GPU-time in that week."""

    user_id: int | None
    project_id: int | None
    week_start: datetime
    week_end: datetime
    limit_hours: int
    added: timedelta

    @property
    def room(self) -> timedelta:
        """What may already be booked in the week for the booking to fit (SQL refuses `booked > room`,
        which is check_weekly's `booked + added > limit`)."""
        return timedelta(hours=self.limit_hours) - self.added


def weekly_room(user, project: Project | None, start: datetime, end: datetime, gpu_count: int, limits: Limits):
    """The weekly limits a booking must keep, for a check done in SQL."""
    scopes = [(user.pk, None, limits.user_gpu_hours_per_week)]
    if project is not None:
        scopes.append((None, project.pk, limits.project_gpu_hours_per_week))
    rooms = []
    for monday, next_monday in weeks_between(start, end):
        added = (min(end, next_monday) - max(start, monday)) * gpu_count
        for user_id, project_id, limit in scopes:
            if limit is not None:
                rooms.append(Room(user_id, project_id, monday, next_monday, limit, added))
    return rooms


def room_error(room: Room, booked: timedelta, project: Project | None, limits: Limits) -> QuotaError:
    """check_weekly's refusal, from a room the SQL check found passed and what is booked in its week."""
    who = "you" if room.user_id is not None else f"project {project.name}"
    return weekly_error(who, booked + room.added, room.limit_hours, room.week_start, limits)


def booked_in(scope: Q, week_start: datetime, week_end: datetime, exclude_booking=None) -> timedelta:
    """GPU-time booked by `scope` inside [week_start, week_end)."""
    rows = Reservation.objects.filter(scope, status__in=COUNTED, start__lt=week_end, end__gt=week_start)
    if exclude_booking is not None:
        rows = rows.exclude(booking=exclude_booking)
    inside = Least(F("end"), Value(week_end)) - Greatest(F("start"), Value(week_start))
    return rows.aggregate(total=Sum(inside, output_field=DurationField()))["total"] or timedelta()


def hours_text(span: timedelta) -> str:
    text = f"{span.total_seconds() / 3600:.2f}".removesuffix(".00")
    return "1 hour" if text == "1" else f"{text} hours"


def deadline_note(limits: Limits) -> str:
    if not limits.deadlines:
        return ""
    return " (" + ", ".join(f"{w.name} deadline window" for w in limits.deadlines) + ")"


@dataclass
class WeekUsage:
    """How much of a weekly limit someone has booked."""

    who: str
    week_start: datetime
    booked_hours: float
    limit_hours: int | None


def usage_this_week(user, now: datetime) -> list[WeekUsage]:
    """The researcher's and their projects' GPU-hours this week against the limits that apply now."""
    monday, next_monday = weeks_between(now, now + timedelta(seconds=1))[0]
    limits = limits_for(now, now + timedelta(seconds=1))
    usage = [
        WeekUsage("you", monday, hours(booked_in(Q(user=user), monday, next_monday)), limits.user_gpu_hours_per_week)
    ]
    for project in user.projects.all():
        booked = hours(booked_in(Q(project=project), monday, next_monday))
        usage.append(WeekUsage(f"project {project.name}", monday, booked, limits.project_gpu_hours_per_week))
    return usage


def hours(span: timedelta) -> float:
    return round(span.total_seconds() / 3600, 2)
