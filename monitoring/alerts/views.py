"""Alert pages: open and resolved, mine and (for admins) all; one alert with its history; acknowledge and snooze."""

from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from fleet.localtime import in_local_time
from monitoring.alerts import lifecycle, silences
from monitoring.alerts.access import can_act, mine, scope_for, visible_alerts
from monitoring.alerts.choices import AlertKind, AlertStatus
from monitoring.alerts.evidence import evidence
from monitoring.alerts.forms import SnoozeForm


@in_local_time
def listing(request):
    state = request.GET.get("state") if request.GET.get("state") in ("open", "resolved") else "open"
    scope = scope_for(request.user, request.GET.get("scope"))
    kind = request.GET.get("kind") if request.GET.get("kind") in AlertKind.values else ""
    alerts = visible_alerts(request.user)
    if scope == "mine":
        alerts = alerts.filter(mine(request.user))
    if kind:
        alerts = alerts.filter(kind=kind)
    counts = {
        "open": alerts.exclude(status=AlertStatus.RESOLVED).count(),
        "resolved": alerts.filter(status=AlertStatus.RESOLVED).count(),
    }
    if state == "open":
        alerts = alerts.exclude(status=AlertStatus.RESOLVED).order_by("-opened_at")
    else:
        alerts = alerts.filter(status=AlertStatus.RESOLVED).order_by("-resolved_at")
    page = Paginator(alerts, 50).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "state": state,
        "scope": scope,
        "kind": kind,
        "kinds": AlertKind.choices,
        "counts": counts,
        "eval_interval": f"{settings.ALERT_EVAL_INTERVAL_S:g}",
        "silences": list(silences.active()),
        "silenced": silences.silenced_ids(page.object_list),
    }
    return render(request, "monitoring/alerts.html", context)


@in_local_time
def detail(request, pk: int):
    alert = get_object_or_404(visible_alerts(request.user), pk=pk)
    context = {
        "alert": alert,
        "events": alert.events.select_related("actor"),
        "reclaims": alert.reclaims.all(),
        "notifications": alert_notifications(request.user, alert),
        "can_act": can_act(request.user, alert),
        "evidence": evidence(alert),
        "silence": silences.silencing(alert) if alert.is_open else None,
        "snooze_form": SnoozeForm(),
    }
    return render(request, "monitoring/alert.html", context)


def alert_notifications(user, alert) -> list:
    """Who was told of each event and how, newest first: the notifier's rows, read through the events they
    hang on (alerts know nothing of the notifier); an admin sees everyone's, anyone else their own."""
    events = alert.events.prefetch_related("notifications__user")
    notes = [n for event in events for n in event.notifications.all() if user.is_staff or n.user_id == user.pk]
    return sorted(notes, key=lambda n: (n.created, n.pk), reverse=True)


def actionable(request, pk: int):
    alert = get_object_or_404(visible_alerts(request.user), pk=pk)
    if not can_act(request.user, alert):
        raise PermissionDenied("Only the alert's owner or an admin can do that.")
    return alert


@require_POST
def acknowledge(request, pk: int):
    alert = actionable(request, pk)
    try:
        lifecycle.acknowledge(alert, request.user)
        messages.success(request, "Acknowledged.")
    except lifecycle.AlertActionError as exc:
        messages.error(request, str(exc))
    return redirect("monitoring:alert", pk=alert.pk)


@require_POST
def snooze(request, pk: int):
    alert = actionable(request, pk)
    form = SnoozeForm(request.POST)
    if not form.is_valid():
        choices = ", ".join(label for _, label in form.fields["minutes"].choices)
        messages.error(request, f"Choose how long to snooze: {choices}.")
        return redirect("monitoring:alert", pk=alert.pk)
    try:
        lifecycle.snooze(alert, request.user, timedelta(minutes=form.cleaned_data["minutes"]))
        messages.success(request, "Snoozed: no emails or webhooks about it until then.")
    except lifecycle.AlertActionError as exc:
        messages.error(request, str(exc))
    return redirect("monitoring:alert", pk=alert.pk)
