"""Bookings: a booked GPU sitting idle, someone squatting on another's booking, and booking notices.

Squatting and notices (preempted, released, changed by an admin) are recorded by the reservation
watcher as ReservationEvent rows; this rule turns them into alerts. The watcher already emails
notices, so their alerts skip email (in-app and webhooks only).
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, QuerySet

from fleet.localtime import when
from monitoring.alerts.attribution import first_projects
from monitoring.alerts.choices import AlertKind, AlertSeverity
from monitoring.alerts.findings import Finding, RuleResult
from monitoring.alerts.models import Alert
from monitoring.alerts.policies import PolicyBook, policy_book
from monitoring.alerts.rules.base import Rule
from monitoring.alerts.windows import gpu_util_windows, stale_after
from monitoring.storage import latest
from reservations.choices import ReservationEventKind, ReservationStatus
from reservations.models import Reservation, ReservationEvent
from training.owners import owners_by_os_username


def active_now(now: datetime) -> QuerySet:
    return Reservation.objects.filter(status=ReservationStatus.ACTIVE, start__lte=now, end__gt=now)


class BookingIdleRule(Rule):
    """A GPU booked right now whose holder runs nothing there while it sits under the idle threshold."""

    kind = AlertKind.BOOKING_IDLE
    escalates = True  # still open after ALERT_ESCALATE_AFTER_H: the admins hear about it

    def evaluate(self, now: datetime, open_alerts: list[Alert]) -> RuleResult:
        rows = list(
            active_now(now).select_related("gpu__node", "gpu__state", "user").prefetch_related("user__os_accounts")
        )
        fresh = [r for r in rows if sampled_since(r.gpu, now - stale_after())]
        book = policy_book()
        projects = first_projects({r.user_id for r in fresh})
        result = RuleResult()
        judged = set()
        for minutes, group in by_window(fresh, book, projects).items():
            start = now - timedelta(minutes=minutes)
            in_use = [r for r, limits in group if holder_holds_memory(r, limits)]
            judged.update(key_of(r) for r in in_use)
            candidates = [(r, limits) for r, limits in group if r.start <= start and r not in in_use]
            stats = gpu_util_windows(sorted({r.gpu_id for r, _ in candidates}), start, now)
            for row, limits in candidates:
                window = stats.get(row.gpu_id)
                if window is None or not window.covered:
                    continue
                judged.add(key_of(row))
                if window.peak is not None and window.peak < limits.max_util_pct:
                    result.findings.append(idle_finding(row, limits, window.peak))
        result.resolved = booking_resolutions(open_alerts, {r.pk for r in rows}, judged, result)
        return result


def sampled_since(gpu, when: datetime) -> bool:
    sampled = latest.of(gpu).last_sample_at
    return sampled is not None and sampled >= when


def by_window(rows, book: PolicyBook, projects: dict) -> dict:
    groups: dict[int, list] = {}
    for row in rows:
        limits = book.for_project(row.project_id or projects.get(row.user_id))
        groups.setdefault(limits.window_minutes, []).append((row, limits))
    return groups


def holder_holds_memory(row: Reservation, limits) -> bool:
    """The holder's own process holding memory there is the idle-process rule's business, not this one's."""
    names = {row.user.get_username(), *(account.username for account in row.user.os_accounts.all())}
    processes = latest.of(row.gpu).processes or []
    return any(p.get("user") in names and (p.get("mem_used_mib") or 0) >= limits.min_memory_mib for p in processes)


def key_of(row: Reservation) -> str:
    return f"{AlertKind.BOOKING_IDLE}:{row.pk}"


def idle_finding(row: Reservation, limits, peak: float) -> Finding:
    return Finding(
        key=key_of(row),
        kind=AlertKind.BOOKING_IDLE,
        severity=AlertSeverity.WARNING,
        title=f"Booked GPU {row.gpu} is idle",
        message=(
            f"GPU {row.gpu}, booked by {row.user.get_username()} until {when(row.end)}, stayed under "
            f"{limits.max_util_pct:g} % for {limits.window_minutes} min (peak {peak:g} %) with none of their "
            "processes on it. Shorten or cancel the booking if you are done, so others can use it."
        ),
        owner_id=row.user_id,
        project_id=row.project_id,
        node_id=row.gpu.node_id,
        gpu_id=row.gpu_id,
        details={"reservation": row.pk, "booking": str(row.booking), "until": row.end.isoformat()},
    )


def booking_resolutions(open_alerts: list[Alert], active_ids: set[int], judged: set[str], result) -> dict:
    firing = {f.key for f in result.findings}
    reasons = {}
    for alert in open_alerts:
        if alert.details.get("reservation") not in active_ids:
            reasons[alert.key] = "The booking ended."
        elif alert.key in judged and alert.key not in firing:
            reasons[alert.key] = "The booked GPU is in use again."
    return reasons


class SquattingRule(Rule):
    """Someone's process on a GPU another researcher booked: one alert for the squatter, one for the holder."""

    kind = AlertKind.SQUATTING
    escalates = True  # still open after ALERT_ESCALATE_AFTER_H: the admins hear about it

    def evaluate(self, now: datetime, open_alerts: list[Alert]) -> RuleResult:
        recent = now - timedelta(seconds=settings.ALERT_SQUATTING_STALE_S)
        events = list(
            ReservationEvent.objects.filter(
                kind=ReservationEventKind.SQUATTING,
                last_seen__gte=recent,
                reservation__status=ReservationStatus.ACTIVE,
                reservation__end__gt=now,
            ).select_related("reservation__gpu__node", "reservation__user", "actor")
        )
        ReservationEvent.objects.filter(pk__in=[e.pk for e in events], processed=None).update(processed=now)
        owners = owners_by_os_username({e.os_user for e in events if e.actor_id is None})
        result = RuleResult(findings=[f for e in events for f in squatting_findings(e, owners)])
        firing = {f.key for f in result.findings}
        result.resolved = {a.key: "The process left the booked GPU." for a in open_alerts if a.key not in firing}
        return result


def squatting_findings(event: ReservationEvent, owners: dict) -> list[Finding]:
    row, gpu = event.reservation, event.reservation.gpu
    squatter = event.actor or owners.get(event.os_user)
    who = squatter.get_username() if squatter else f"OS user {event.os_user}"
    common = {
        "kind": AlertKind.SQUATTING,
        "node_id": gpu.node_id,
        "gpu_id": gpu.id,
        "details": {"reservation": row.pk, "os_user": event.os_user, "pid": event.pid, "holder": row.user_id},
    }
    for_squatter = Finding(
        key=f"{AlertKind.SQUATTING}:{event.pk}:squatter",
        title=f"You are using GPU {gpu}, booked by {row.user.get_username()}",
        message=f"{event.detail} Move the process (pid {event.pid or 'N/A'}) to a free GPU or book one.",
        severity=AlertSeverity.WARNING,
        owner_id=squatter.pk if squatter else None,
        **common,
    )
    for_holder = Finding(
        key=f"{AlertKind.SQUATTING}:{event.pk}:holder",
        title=f"{who} is using GPU {gpu} you booked",
        message=f"{event.detail} The admins have been told if nobody owns the process.",
        severity=AlertSeverity.INFO,
        owner_id=row.user_id,
        project_id=row.project_id,
        **common,
    )
    return [for_squatter, for_holder]


class BookingNoticeRule(Rule):
    """Preempted, released or changed bookings become alerts in the holder's notification center."""

    kind = AlertKind.BOOKING_NOTICE

    def evaluate(self, now: datetime, open_alerts: list[Alert]) -> RuleResult:
        notices = ReservationEvent.objects.filter(processed=None).filter(~Q(kind=ReservationEventKind.SQUATTING))
        claimed = []
        for event in notices.select_related("reservation__gpu__node"):
            if ReservationEvent.objects.filter(pk=event.pk, processed=None).update(processed=now):
                claimed.append(event)
        result = RuleResult(findings=[notice(e) for e in claimed])
        # A notice is news, not a lasting condition: it opens and resolves in the same evaluation.
        result.resolved = {f.key: "Notice delivered." for f in result.findings}
        result.resolved.update({a.key: "Notice delivered." for a in open_alerts})
        return result


def notice(event: ReservationEvent) -> Finding:
    row = event.reservation
    severity = AlertSeverity.WARNING if event.kind == ReservationEventKind.PREEMPTED else AlertSeverity.INFO
    return Finding(
        key=f"{AlertKind.BOOKING_NOTICE}:{event.pk}",
        kind=AlertKind.BOOKING_NOTICE,
        severity=severity,
        title=f"{ReservationEventKind(event.kind).label}: GPU {row.gpu}",
        message=event.detail,
        owner_id=event.user_id,
        project_id=row.project_id,
        node_id=row.gpu.node_id,
        gpu_id=row.gpu_id,
        details={"reservation": row.pk, "event": event.kind, "emailed": True},
    )
