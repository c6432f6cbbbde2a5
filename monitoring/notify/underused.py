"""The underused-GPU list of a person's digests: which period each digest channel still owes, claimed once.

An hourly or daily email or webhook digest lists its person's underused GPUs (monitoring/costs/idle_report.py)
from its previous digest to the end of the period just closed, so a person with underused GPUs and no
alert still gets the digest. `UnderusedReported` marks how far each channel has been told; moving it on
under a row lock is the claim, so two workers never list one period twice. A digest due in the person's
quiet hours waits for their end, like every held message.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model

from fleet.localtime import as_utc
from monitoring.alerts.choices import IdleStretchKind
from monitoring.alerts.models import IdleStretch
from monitoring.costs.idle_report import UnderusedProcess, underused
from monitoring.notify.models import Notification, NotificationPreference, UnderusedReported
from monitoring.notify.timing import PERIODS, is_quiet, last_period_end, zone_of
from monitoring.notify.transports import TransportError, destination_id_kwargs, destination_id_of, transport_classes

LOOK_BACK = timedelta(days=1)  # a channel's first digest, or one after a pause, reaches back this far


@dataclass(frozen=True)
class Told:
    """One channel's claimed period: its underused processes from `since` to `until`."""

    mark: int
    previous: datetime | None
    since: datetime
    until: datetime
    processes: list[UnderusedProcess]


def owed_until(prefs: NotificationPreference, transport: str, now: datetime) -> datetime | None:
    """The end of the period this channel's digest covers now; None when it sends no digests or it is quiet."""
    local = now.astimezone(zone_of(prefs))
    if is_quiet(prefs, local):
        return None
    until = last_period_end(prefs.delivery_of(transport), local)
    return None if until is None else as_utc(until)


def digest_channels(prefs: NotificationPreference) -> list[tuple[int, str, int | None]]:
    """(person, transport, destination) of each channel the person takes as a digest."""
    found = []
    for kind, transport in transport_classes():
        if prefs.delivery_of(kind) in PERIODS:
            found += [(prefs.user_id, kind, d.pk if d else None) for d in transport.reaches(prefs)]
    return found


def channels_owed(now: datetime) -> list[tuple[int, str, int | None]]:
    """Digest channels of people with underused GPUs lately whose last closed period has not been told yet
    (and whose held messages are not waiting to be retried: the list goes with them)."""
    owners = IdleStretch.objects.filter(kind=IdleStretchKind.UNDERUSED, until__gt=now - LOOK_BACK, owner__isnull=False)
    people = NotificationPreference.objects.filter(user__in=owners.values("owner_id"), user__is_active=True)
    marks = {(m.user_id, m.transport, destination_id_of(m)): m.until for m in UnderusedReported.objects.all()}
    owed = []
    for prefs in people.select_related("user"):
        for key in digest_channels(prefs):
            until = owed_until(prefs, key[1], now)
            told = marks.get(key)
            if until is not None and (told is None or told < until) and not retrying(key, now):
                owed.append(key)
    return owed


def retrying(key: tuple[int, str, int | None], now: datetime) -> bool:
    user_id, transport, destination_id = key
    channel = destination_id_kwargs(transport, destination_id)
    held = Notification.objects.filter(user_id=user_id, transport=transport, processed=None, **channel)
    return held.filter(deliver_after__gt=now, attempts__gt=0).exists()


def claim(key: tuple[int, str, int | None], prefs: NotificationPreference, now: datetime) -> Told | None:
    """Move the channel's mark to the end of its closed period, inside the caller's transaction; None when
    there is no such period or it was told already."""
    user_id, transport, destination_id = key
    until = owed_until(prefs, transport, now)
    if until is None:
        return None
    where = {"user_id": user_id, "transport": transport, **destination_id_kwargs(transport, destination_id)}
    UnderusedReported.objects.bulk_create([UnderusedReported(**where)], ignore_conflicts=True)
    mark = UnderusedReported.objects.select_for_update().get(**where)
    if mark.until is not None and mark.until >= until:
        return None
    previous = mark.until
    since = max(previous or until - LOOK_BACK, until - LOOK_BACK)
    mark.until = until
    mark.save(update_fields=["until"])
    person = get_user_model().objects.get(pk=user_id)
    return Told(mark.pk, previous, since, until, underused(since, until, owner=person))


def sent(told: Told | None) -> None:
    if told is not None:
        UnderusedReported.objects.filter(pk=told.mark).update(attempts=0, error="")


def failed(told: Told | None, exc: TransportError) -> None:
    """A failure that may pass gives the period back, to be told at the next look (NOTIFY_MAX_RETRIES times)."""
    if told is None:
        return
    mark = UnderusedReported.objects.get(pk=told.mark)
    attempts = mark.attempts + 1
    error = f"attempt {attempts}: {exc.message}"
    if exc.permanent or attempts > settings.NOTIFY_MAX_RETRIES:
        UnderusedReported.objects.filter(pk=told.mark).update(attempts=0, error=error)
    else:
        rows = UnderusedReported.objects.filter(pk=told.mark, until=told.until)
        rows.update(until=told.previous, attempts=attempts, error=error)
