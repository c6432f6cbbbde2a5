"""When an email or webhook message may go out: now, at the end of the person's digest period, or after
their quiet hours, all in the person's own time zone."""

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings

from fleet.localtime import as_utc, zone_named
from monitoring.notify.choices import Delivery


def zone_of(prefs) -> ZoneInfo:
    return zone_named(prefs.time_zone) or ZoneInfo(settings.TIME_ZONE)


def period_end(delivery: str, local: datetime) -> datetime:
    """The end of the digest period holding `local` (an aware local time); `local` itself when immediate."""
    if delivery == Delivery.HOURLY:
        return local.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    if delivery == Delivery.DAILY:
        today = datetime.combine(local.date(), time(settings.NOTIFY_DIGEST_HOUR), local.tzinfo)
        return (
            today if local < today else datetime.combine(local.date() + timedelta(days=1), today.time(), local.tzinfo)
        )
    return local


PERIODS = {Delivery.HOURLY: timedelta(hours=1), Delivery.DAILY: timedelta(days=1)}


def last_period_end(delivery: str, local: datetime) -> datetime | None:
    """The end of the latest digest period closed at `local` (an aware local time); None when immediate."""
    if delivery not in PERIODS:
        return None
    return period_end(delivery, local) - PERIODS[delivery]  # wall-clock arithmetic: 08:00 stays 08:00 across DST


def is_quiet(prefs, local: datetime) -> bool:
    start, end, now = prefs.quiet_start, prefs.quiet_end, local.time()
    if start is None or end is None:
        return False
    return start <= now < end if start < end else now >= start or now < end


def quiet_end_after(prefs, local: datetime) -> datetime:
    end = datetime.combine(local.date(), prefs.quiet_end, local.tzinfo)
    return end if end > local else datetime.combine(local.date() + timedelta(days=1), prefs.quiet_end, local.tzinfo)


def release_at(prefs, transport: str, now: datetime) -> datetime | None:
    """When a message on this channel may be sent; None for now."""
    local = now.astimezone(zone_of(prefs))
    due = period_end(prefs.delivery_of(transport), local)
    if is_quiet(prefs, due):
        due = quiet_end_after(prefs, due)
    due = as_utc(due)
    return None if due <= now else due
