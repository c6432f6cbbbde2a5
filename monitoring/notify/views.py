"""The notification center and each person's alert settings: preferences, and the destinations of each
transport that has them (webhooks), added with the form its folder gives."""

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_POST

from fleet.api.text import whole_number
from fleet.localtime import in_local_time
from monitoring.notify.choices import TransportKind
from monitoring.notify.forms import PreferenceForm
from monitoring.notify.from_events import preferences_of
from monitoring.notify.models import Notification
from monitoring.notify.transports import destination_kinds, destination_model, destination_slug, transport_class
from monitoring.notify.transports.inapp.live import broadcast_unread


@in_local_time
def center(request):
    notes = (
        Notification.objects.filter(user=request.user, transport=TransportKind.IN_APP)
        .select_related("event__alert")
        .order_by("-created", "-id")
    )
    page = Paginator(notes, 50).get_page(request.GET.get("page"))
    return render(request, "monitoring/notifications.html", {"page": page})


@require_POST
def mark_read(request):
    notes = Notification.objects.filter(user=request.user, transport=TransportKind.IN_APP, read_at=None)
    ids = [whole_number(i) for i in request.POST.getlist("id")]
    if ids:
        if None in ids:
            messages.error(request, "Unknown notification.")
            return redirect("monitoring:notifications")
        notes = notes.filter(pk__in=ids)
    notes.update(read_at=timezone.now())
    broadcast_unread(request.user.pk)
    return redirect("monitoring:notifications")


def settings_page(request):
    prefs = preferences_of(request.user)
    form = PreferenceForm(request.POST if request.POST.get("form") == "preferences" else None, instance=prefs)
    sections = [destination_section(request, kind) for kind in destination_kinds()]
    if request.method == "POST":
        if form.is_bound and form.is_valid():
            form.save()
            messages.success(request, "Preferences saved.")
            return redirect("monitoring:alert_settings")
        for section in sections:
            if section["form"].is_bound and section["form"].is_valid():
                return add_destination(request, section["form"])
    context = {"form": form, "destinations": sections, "digest_hour": f"{settings.NOTIFY_DIGEST_HOUR:02d}"}
    return render(request, "monitoring/alert_settings.html", context, status=400 if request.method == "POST" else 200)


def destination_section(request, kind: str) -> dict:
    """What the page shows of one transport's destinations: its form (bound when it was posted) and the
    person's own, each as the form's `columns`."""
    form_class = transport_class(kind).form
    form = form_class(request.POST if request.POST.get("form") == kind else None)
    mine = destination_model(kind).objects.filter(user=request.user)
    rows = [(row, [(name, getattr(row, name)) for name in form_class.columns]) for row in mine]
    meta = form_class._meta.model._meta
    urls = {"toggle": f"monitoring:{kind}_toggle", "delete": f"monitoring:{kind}_delete"}
    return {"kind": kind, "form": form, "rows": rows, "meta": meta, **urls}


def add_destination(request, form):
    added = form.save(commit=False)
    added.user = request.user
    added.save()
    messages.success(request, f"{noun(added)} {added.name} added. {form.added}".strip())
    return redirect("monitoring:alert_settings")


def noun(destination) -> str:
    return str(destination._meta.verbose_name).capitalize()


def own_destination(request, kind: str, pk: int):
    """One of the person's own destinations of this kind; someone else's is a 404, like a missing one."""
    return get_object_or_404(destination_model(kind).objects.filter(user=request.user), pk=pk)


@require_POST
def destination_delete(request, pk: int, kind: str):
    destination = own_destination(request, kind, pk)
    destination.delete()
    messages.success(request, f"{noun(destination)} {destination.name} removed.")
    return redirect("monitoring:alert_settings")


@require_POST
def destination_toggle(request, pk: int, kind: str):
    destination = own_destination(request, kind, pk)
    destination.active = not destination.active
    destination.save(update_fields=["active"])
    state = "enabled" if destination.active else "paused"
    messages.success(request, f"{noun(destination)} {destination.name} {state}.")
    return redirect("monitoring:alert_settings")


def destination_urls() -> list:
    """Remove and pause or enable for each transport's destinations: /alerts/webhooks/<pk>/delete/ and so on."""
    found = []
    for kind in destination_kinds():
        plural = destination_slug(kind)
        found += [
            path(f"alerts/{plural}/<int:pk>/delete/", destination_delete, {"kind": kind}, name=f"{kind}_delete"),
            path(f"alerts/{plural}/<int:pk>/toggle/", destination_toggle, {"kind": kind}, name=f"{kind}_toggle"),
        ]
    return found
