"""One notification per state change per person per channel, however many alerts the change touched.

Alerts that change state together (the processes of one run on several nodes, the GPUs of one node, in
one evaluation) are told as one notification, "… and 3 more". A notification's `dedupe_key` names the
change for one person and channel; a unique constraint on it turns a second insert into nothing, so two
dispatchers (workers, evaluators) can never both create, and so never both send, the same notification.
"""

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import F, Func, Value

from monitoring.alerts.models import Alert, AlertEvent
from monitoring.notify.models import Notification


def subject(alert: Alert) -> str:
    """What alerts that change together share: their run, else their node, else nothing but themselves."""
    run_id = (alert.details or {}).get("run_id")
    if run_id:
        return f"run:{run_id}"
    if alert.node_id:
        return f"node:{alert.node_id}"
    return f"alert:{alert.pk}"


def change_key(event: AlertEvent) -> str:
    alert = event.alert
    return f"{alert.kind}:{subject(alert)}:{event.kind}:{event.created.timestamp():.6f}"


def dedupe_key(event: AlertEvent, user_id: int, transport: str, webhook_id: int | None) -> str:
    return f"{user_id}:{transport}:{webhook_id or '-'}:{change_key(event)}"


def record(event: AlertEvent, wanted: list[tuple]) -> list[int]:
    """Create the notifications of `event` for (person, transport, webhook, deliver_after) tuples; return the
    new ones' ids.

    Where one of them already exists for another alert of the same change, the event's alert is added to
    that notification's `also` instead. Runs inside the dispatcher's transaction: a concurrent insert of
    the same key waits for it and then does nothing."""
    rows = [
        Notification(
            event=event,
            user=user,
            transport=transport,
            webhook=hook,
            dedupe_key=dedupe_key(event, user.pk, transport, hook.pk if hook else None),
            deliver_after=after,
        )
        for user, transport, hook, after in wanted
    ]
    if not rows:
        return []
    Notification.objects.bulk_create(rows, ignore_conflicts=True)
    same_change = Notification.objects.filter(dedupe_key__in=[r.dedupe_key for r in rows])
    same_change.exclude(event=event).update(
        also=Func(
            F("also"), Value(event.alert_id), function="array_append", output_field=ArrayField(models.IntegerField())
        )
    )
    return list(same_change.filter(event=event).values_list("pk", flat=True))
