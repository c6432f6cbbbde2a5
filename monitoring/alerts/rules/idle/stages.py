"""Reclaim, for projects that opt in: a first warning at T, a second at T + W, the process ended at T + 2W.

T is when the first reclaim warning goes out (W is the idle window). One stage per evaluation; each
re-measures the idle stretch since the first warning, so a process is never ended without both
warnings delivered, at a time named in the future, or after it did any work.
"""

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from fleet.celery import node_queue
from monitoring.alerts import lifecycle
from monitoring.alerts.choices import AlertEventKind
from monitoring.alerts.models import Alert, Reclaim, ReclaimExemption
from monitoring.alerts.policies import policy_book
from monitoring.alerts.rules.idle.reclaim import reclaim_process
from monitoring.alerts.windows import gpu_util_windows, process_sm_windows


class Exemptions:
    """Users and nodes an admin has exempted from reclaim, loaded once."""

    def __init__(self) -> None:
        rows = list(ReclaimExemption.objects.values_list("user_id", "node_id", "run_id"))
        self.users = {u for u, _, _ in rows if u}
        self.nodes = {n for _, n, _ in rows if n}
        self.runs = {r for _, _, r in rows if r}

    def covers(self, alert: Alert) -> bool:
        run_id = alert.details.get("run_id")
        return (
            alert.owner_id in self.users or alert.node_id in self.nodes or (run_id is not None and run_id in self.runs)
        )


def advance(firing: list[Alert], now: datetime) -> None:
    """Move each still-idle alert of a reclaiming project one stage on, when it is due."""
    candidates = [a for a in firing if a.stage < 3]
    if not candidates:
        return
    book, exemptions = policy_book(), Exemptions()
    for alert in candidates:
        limits = book.for_project(alert.project_id)
        if limits.reclaim and not exemptions.covers(alert) and alert.node_id:
            advance_one(alert, limits.reclaim_grace_s, now)


def window_of(alert: Alert) -> timedelta:
    return timedelta(minutes=alert.details["window_minutes"])


def idle_since(alert: Alert) -> datetime:
    return datetime.fromisoformat(alert.details["idle_since"])


def moment(alert: Alert, name: str) -> datetime | None:
    value = alert.details.get(name)
    return None if value is None else datetime.fromisoformat(value)


def clock(moment: datetime) -> str:
    return timezone.localtime(moment).strftime("%d %b %H:%M %Z")


def advance_one(alert: Alert, grace_s: int, now: datetime) -> None:
    """Warn at T, warn again at T + W, end at the time the second warning named (at least T + 2W, at least W later).

    T is the first reclaim warning, not the start of idleness: a project that turns reclaim on for an
    already idle process still gives both warnings, each naming a time still to come.
    """
    window, first = window_of(alert), moment(alert, "first_warning_at")
    if first is None:
        return first_warning(alert, window, now)
    if not idle_throughout(alert, first - window, now):
        return start_over(alert, now)
    ends_at = moment(alert, "ends_at")
    if ends_at is None and now >= first + window:
        second_warning(alert, max(first + 2 * window, now + window), now)
    elif ends_at is not None and now >= ends_at and warnings_delivered(alert):
        request_reclaim(alert, grace_s, now)


def first_warning(alert: Alert, window: timedelta, now: datetime) -> None:
    alert.details["first_warning_at"] = now.isoformat()
    alert.save(update_fields=["details"])
    minutes = int((now - idle_since(alert)).total_seconds() // 60)
    reason = (
        f"First warning: idle for {minutes} min and its project reclaims idle processes; unless it works, "
        f"it will be ended no earlier than {clock(now + 2 * window)}."
    )
    lifecycle.advance_stage(alert, 1, AlertEventKind.WARNED, reason, now)


def second_warning(alert: Alert, ends_at: datetime, now: datetime) -> None:
    alert.details["ends_at"] = ends_at.isoformat()
    alert.save(update_fields=["details"])
    minutes = int((now - idle_since(alert)).total_seconds() // 60)
    reason = f"Second warning: idle for {minutes} min; it will be ended at {clock(ends_at)}."
    lifecycle.advance_stage(alert, 2, AlertEventKind.WARNED, reason, now)


def start_over(alert: Alert, now: datetime) -> None:
    """It worked at some point since the first warning (or was not measured): warnings count again from here."""
    for name in ("first_warning_at", "ends_at"):
        alert.details.pop(name, None)
    alert.details["idle_since"] = (now - window_of(alert)).isoformat()
    alert.stage = 1
    alert.save(update_fields=["details", "stage"])


def warnings_delivered(alert: Alert) -> bool:
    """Both warnings were handed to the dispatcher (told in-app, queued for email) before anything is ended."""
    warned = alert.events.filter(kind=AlertEventKind.WARNED, processed__isnull=False)
    return warned.filter(created__gte=moment(alert, "first_warning_at")).count() >= 2


def idle_throughout(alert: Alert, since: datetime, now: datetime) -> bool:
    limit = alert.details["max_util_pct"]
    if alert.details.get("basis") == "process":
        stats = process_sm_windows([(alert.gpu_id, alert.details["pid"])], since, now)[
            (alert.gpu_id, alert.details["pid"])
        ]
    else:
        stats = gpu_util_windows([alert.gpu_id], since, now).get(alert.gpu_id)
    return stats is not None and stats.covered and stats.peak is not None and stats.peak < limit


def request_reclaim(alert: Alert, grace_s: int, now: datetime) -> Reclaim:
    d = alert.details
    started = d.get("started_at")
    reclaim = Reclaim.objects.create(
        alert=alert,
        node_id=alert.node_id,
        gpu_id=alert.gpu_id,
        owner_id=alert.owner_id,
        os_user=d.get("os_user", ""),
        pid=d["pid"],
        cmdline=d.get("cmdline", ""),
        process_started_at=None if started is None else datetime.fromtimestamp(float(started), tz=now.tzinfo),
        grace_s=grace_s,
        requested_at=now,
    )
    minutes = int((now - idle_since(alert)).total_seconds() // 60)
    reason = f"Idle for {minutes} min after two warnings: ending pid {d['pid']} now ({clock(now)})."
    lifecycle.advance_stage(alert, 3, AlertEventKind.RECLAIM_REQUESTED, reason, now)
    queue = node_queue(d["node"])
    transaction.on_commit(lambda: send_reclaim(reclaim.pk, queue))
    return reclaim


def send_reclaim(reclaim_pk: int, queue: str) -> None:
    reclaim_process.apply_async(args=[reclaim_pk], queue=queue)
