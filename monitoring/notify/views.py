"""The notification center and each person's alert settings (preferences and webhooks)."""

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from fleet.api.text import whole_number
from fleet.localtime import in_local_time
from monitoring.notify.choices import TransportKind
from monitoring.notify.dispatch import preferences_of
from monitoring.notify.forms import PreferenceForm, WebhookForm
from monitoring.notify.live import broadcast_unread
from monitoring.notify.models import Notification


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
    hook_form = WebhookForm(request.POST if request.POST.get("form") == "webhook" else None)
    if request.method == "POST":
        if form.is_bound and form.is_valid():
            form.save()
            messages.success(request, "Preferences saved.")
            return redirect("monitoring:alert_settings")
        if hook_form.is_bound and hook_form.is_valid():
            hook = hook_form.save(commit=False)
            hook.user = request.user
            hook.save()
            messages.success(request, f"Webhook {hook.name} added. Its signing secret is shown below.")
            return redirect("monitoring:alert_settings")
    context = {
        "form": form,
        "hook_form": hook_form,
        "webhooks": request.user.webhooks.all(),
        "digest_hour": f"{settings.NOTIFY_DIGEST_HOUR:02d}",
    }
    return render(request, "monitoring/alert_settings.html", context, status=400 if request.method == "POST" else 200)


@require_POST
def webhook_delete(request, pk: int):
    hook = get_object_or_404(request.user.webhooks, pk=pk)
    hook.delete()
    messages.success(request, f"Webhook {hook.name} removed.")
    return redirect("monitoring:alert_settings")


@require_POST
def webhook_toggle(request, pk: int):
    hook = get_object_or_404(request.user.webhooks, pk=pk)
    hook.active = not hook.active
    hook.save(update_fields=["active"])
    messages.success(request, f"Webhook {hook.name} {'enabled' if hook.active else 'paused'}.")
    return redirect("monitoring:alert_settings")
