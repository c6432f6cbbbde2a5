"""Times as people read them: in the active time zone (settings.TIME_ZONE or the browser's)."""

from datetime import datetime, time, timedelta

from django.utils import timezone
from django.utils.dateformat import format as date_format


def when(moment: datetime) -> str:
    """e.g. 'Tue 3 Nov 2026 18:00 CET'."""
    return date_format(timezone.localtime(moment), "D j M Y H:i T")


def week_start(moment: datetime) -> datetime:
    """Monday 00:00 local time of the week holding `moment`, as an aware datetime."""
    local = timezone.localtime(moment)
    monday = local.date() - timedelta(days=local.weekday())
    return timezone.make_aware(datetime.combine(monday, time.min))


def weeks_between(start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """The local calendar weeks [monday, next monday) that [start, end) touches."""
    weeks = []
    monday = week_start(start)
    while monday < end:
        following = week_start(monday + timedelta(days=7, hours=12))
        weeks.append((monday, following))
        monday = following
    return weeks
