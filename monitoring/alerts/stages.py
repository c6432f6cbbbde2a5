"""Reclaim, for projects that opt in: a first warning at T (the alert), a second at 2T, the process ended at 3T.

One stage per evaluation, and each stage re-measures the whole idle stretch, so a process is never
ended without both warnings or after it did any work.
"""

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from fleet.celery import node_queue
from fleet.choices import AlertEventKind
from monitoring.alerts import lifecycle
from monitoring.alerts.models import Alert, Reclaim, ReclaimExemption
from monitoring.alerts.policies import PolicyBook
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
    book, exemptions = PolicyBook(), Exemptions()
    for alert in candidates:
        limits = book.for_project(alert.project_id)
        if limits.reclaim and not exemptions.covers(alert) and alert.node_id:
            advance_one(alert, limits.reclaim_grace_s, now)


def window_of(alert: Alert) -> timedelta:
    return timedelta(minutes=alert.details["window_minutes"])


def idle_since(alert: Alert) -> datetime:
    return datetime.fromisoformat(alert.details["idle_since"])


def advance_one(alert: Alert, grace_s: int, now: datetime) -> None:
    window, since = window_of(alert), idle_since(alert)
    due = min(3, int((now - since) / window))
    if alert.stage + 1 > due:
        return
    if not idle_throughout(alert, since, now):
        # Idle now, but not provably all along (e.g. no evaluation ran for a while): count again from here.
        alert.details["idle_since"] = (now - window).isoformat()
        alert.save(update_fields=["details"])
        return
    if alert.stage == 1:
        end_at = timezone.localtime(since + 3 * window).strftime("%H:%M")
        reason = (
            f"Second warning: idle for {int((now - since).total_seconds() // 60)} min; it will be ended at {end_at}."
        )
        lifecycle.advance_stage(alert, 2, AlertEventKind.WARNED, reason, now)
    else:
        request_reclaim(alert, grace_s, now)


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
    reason = f"Idle for {minutes} min after two warnings: ending pid {d['pid']}."
    lifecycle.advance_stage(alert, 3, AlertEventKind.RECLAIM_REQUESTED, reason, now)
    queue = node_queue(d["node"])
    transaction.on_commit(lambda: send_reclaim(reclaim.pk, queue))
    return reclaim


def send_reclaim(reclaim_pk: int, queue: str) -> None:
    from monitoring.tasks import reclaim_process

    reclaim_process.apply_async(args=[reclaim_pk], queue=queue)
