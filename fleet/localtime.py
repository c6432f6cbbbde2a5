"""Times as people read them: in the active time zone (settings.TIME_ZONE or the browser's)."""

from datetime import UTC, datetime, time, timedelta
from functools import wraps
from urllib.parse import unquote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils import timezone
from django.utils.dateformat import format as date_format


def when(moment: datetime) -> str:
    """e.g. 'Tue 3 Nov 2026 18:00 CET'."""
    return date_format(timezone.localtime(moment), "D j M Y H:i T")


def week_start(moment: datetime) -> datetime:
    """Monday 00:00 local time of the week holding `moment`, as an aware datetime."""
    local = timezone.localtime(moment)
    monday = local.date() - timedelta(days=local.weekday())
    return as_utc(timezone.make_aware(datetime.combine(monday, time.min)))


def as_utc(moment: datetime) -> datetime:
    """Arithmetic between two times of one zone ignores DST in Python; in UTC it is real time."""
    return moment.astimezone(UTC)


def weeks_between(start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """The local calendar weeks [monday, next monday) that [start, end) touches."""
    weeks = []
    monday = week_start(start)
    while monday < end:
        following = week_start(monday + timedelta(days=7, hours=12))
        weeks.append((monday, following))
        monday = following
    return weeks


def zone_named(name: str | None):
    """The zone of that IANA name, or None for anything else (the name comes from a cookie or a form)."""
    if not name or len(name) > 64:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def zone_for(request):
    """The zone a page's times are shown and read in: a form's `tz`, the browser's (cookie), or TIME_ZONE."""
    chosen = zone_named(request.POST.get("tz")) or zone_named(unquote(request.COOKIES.get("tz", "")))
    return chosen or timezone.get_default_timezone()


def in_local_time(view):
    """Render and read the view's times in the visitor's zone."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        with timezone.override(zone_for(request)):
            return view(request, *args, **kwargs)

    return wrapper
