"""One notification per state change per person per channel, however many alerts the change touched.

Alerts that change state together (the processes of one run on several nodes, the GPUs of one node, in
one evaluation) are told as one notification, "… and 3 more". A notification's `dedupe_key` names the
change for one person and channel; a unique constraint on it turns a second insert into nothing, so two
dispatchers (workers, evaluators) can never both create, and so never both send, the same notification.

The alerts of one run often change a little apart (a DDP run's GPUs go idle one evaluation after another).
Within NOTIFY_GROUP_WINDOW_S of the first, a run's alert that opens or resolves the same way joins the person's
notification of it on that channel — while the in-app one is unread, while the email or webhook message
has not gone — instead of notifying afresh. Such a message waits for the window to close, then goes
with everything that joined (monitoring/notify/held.py). A lock per run and change keeps two
dispatchers from both starting a group.
"""

from datetime import timedelta

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import connection, models
from django.db.models import F, Func, Value

from monitoring.alerts.choices import AlertEventKind
from monitoring.alerts.models import Alert, AlertEvent
from monitoring.notify.choices import TransportKind
from monitoring.notify.models import Notification
from monitoring.notify.transports import destination_kwargs


def subject(alert: Alert) -> str:
    """What alerts that change together share: their run, else their node, else nothing but themselves."""
    run_id = (alert.details or {}).get("run_id")
    if run_id:
        return f"run:{run_id}"
    if alert.node_id:
        return f"node:{alert.node_id}"
    return f"alert:{alert.pk}"


def group_key(event: AlertEvent) -> str:
    """The change, whenever it happens: the rule, the run or node, and what happened."""
    alert = event.alert
    return f"{alert.kind}:{subject(alert)}:{event.kind}"


def change_key(event: AlertEvent) -> str:
    return f"{group_key(event)}:{event.created.timestamp():.6f}"


def channel_key(user_id: int, transport: str, destination_id: int | None) -> str:
    return f"{user_id}:{transport}:{destination_id or '-'}"


def dedupe_key(event: AlertEvent, user_id: int, transport: str, destination_id: int | None) -> str:
    return f"{channel_key(user_id, transport, destination_id)}:{change_key(event)}"


def pk_of(destination) -> int | None:
    return destination.pk if destination else None


GROUPED_ACROSS = {AlertEventKind.OPENED, AlertEventKind.RESOLVED}


def window(event: AlertEvent) -> timedelta | None:
    """How long later alerts of this change may join its notifications; None: only this evaluation's."""
    if settings.NOTIFY_GROUP_WINDOW_S <= 0 or not subject(event.alert).startswith("run:"):
        return None
    if event.kind not in GROUPED_ACROSS:  # a reclaim warning names a time: it never waits
        return None
    return timedelta(seconds=settings.NOTIFY_GROUP_WINDOW_S)


def open_group(event: AlertEvent, user, transport: str, destination) -> Notification | None:
    """The person's notification of the same change on this channel, from an earlier evaluation, that a new
    alert may still join: its window is open and it is unread (in-app) or unsent (email, webhook)."""
    prefix = f"{channel_key(user.pk, transport, pk_of(destination))}:{group_key(event)}:"
    rows = Notification.objects.filter(
        user=user,
        transport=transport,
        group_until__gt=event.created,
        dedupe_key__startswith=prefix,
        **destination_kwargs(transport, destination),
    ).exclude(dedupe_key=dedupe_key(event, user.pk, transport, pk_of(destination)))
    rows = rows.filter(read_at=None) if transport == TransportKind.IN_APP else rows.filter(processed=None)
    return rows.order_by("created", "id").first()


def lock(event: AlertEvent) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"notify-group:{group_key(event)}"])


def append_alert(rows, alert_id: int) -> None:
    rows.exclude(also__contains=[alert_id]).update(
        also=Func(F("also"), Value(alert_id), function="array_append", output_field=ArrayField(models.IntegerField()))
    )


def record(event: AlertEvent, wanted: list[tuple]) -> list[int]:
    """Create the notifications of `event` for (person, transport, destination, deliver_after) tuples; return the
    new ones' ids.

    Where one of them already exists for another alert of the same change (this evaluation's, or an
    earlier one's still open to join), the event's alert is added to that notification's `also` instead.
    Runs inside the dispatcher's transaction: a concurrent insert of the same key waits for it and then
    does nothing."""
    span = window(event)
    if span is not None and wanted:
        lock(event)
    rows, joined = [], []
    for user, transport, destination, after in wanted:
        earlier = open_group(event, user, transport, destination) if span is not None else None
        if earlier is not None:
            joined.append(earlier.pk)
            continue
        until = event.created + span if span is not None else None
        rows.append(
            Notification(
                event=event,
                user=user,
                transport=transport,
                dedupe_key=dedupe_key(event, user.pk, transport, pk_of(destination)),
                deliver_after=max(after, until) if after is not None and until is not None else after,
                group_until=until,
                **destination_kwargs(transport, destination),
            )
        )
    append_alert(Notification.objects.filter(pk__in=joined).exclude(event__alert_id=event.alert_id), event.alert_id)
    if not rows:
        return []
    Notification.objects.bulk_create(rows, ignore_conflicts=True)
    same_change = Notification.objects.filter(dedupe_key__in=[r.dedupe_key for r in rows])
    append_alert(same_change.exclude(event=event), event.alert_id)
    return list(same_change.filter(event=event).values_list("pk", flat=True))
