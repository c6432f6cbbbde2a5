"""AlertEvent rows are the outbox: whoever tells people reads them, and this module only says when to look.

`events_recorded` is sent after the commit that stored events of one moment (one evaluation, one
reclaim's outcome) with one of them; a dispatcher claims that event with every unclaimed one of the
same moment. Alerts never call the notifier: it connects to this signal (monitoring/apps.py), and
events nobody claimed (a lost hand-off) are picked up by its own periodic look.
"""

from datetime import datetime

from django.db import transaction
from django.dispatch import Signal

from monitoring.alerts.models import AlertEvent

events_recorded = Signal()  # keyword argument: event_pk


def announce(event_pk: int) -> None:
    """Send `events_recorded` once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: events_recorded.send(sender=AlertEvent, event_pk=event_pk))


def announce_moment(created: datetime) -> None:
    """Announce the events stored at `created`, if there are any nobody has claimed yet."""
    pk = AlertEvent.objects.filter(created=created, processed=None).values_list("pk", flat=True).first()
    if pk is not None:
        announce(pk)
