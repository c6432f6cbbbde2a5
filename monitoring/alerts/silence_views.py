"""The admins' silences page: active and recent silences, a form to add one, and Expire."""

from datetime import timedelta

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from fleet.localtime import in_local_time, when
from monitoring.alerts import silences
from monitoring.alerts.forms import SilenceForm
from monitoring.alerts.models import Silence

RECENT = timedelta(days=7)


def staff_only(request) -> None:
    if not request.user.is_staff:
        raise PermissionDenied("Only admins manage silences.")


@in_local_time
def silence_list(request):
    staff_only(request)
    form = SilenceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        made = silences.create(
            by=request.user,
            duration=data["duration"],
            reason=data["reason"],
            node=data["node"],
            user=data["user"],
            kind=data["kind"],
        )
        messages.success(request, f"Silenced {made.matchers()} until {when(made.ends_at)}.")
        return redirect("monitoring:silences")
    now = timezone.now()
    context = {
        "form": form,
        "active": silences.active(now),
        "ended": Silence.objects.filter(ends_at__lte=now, ends_at__gt=now - RECENT).select_related(
            "node", "user", "created_by"
        ),
    }
    return render(request, "monitoring/silences.html", context, status=400 if request.method == "POST" else 200)


@require_POST
def silence_expire(request, pk: int):
    staff_only(request)
    silence = silences.expire(get_object_or_404(Silence, pk=pk))
    messages.success(request, f"The silence of {silence.matchers()} has ended.")
    return redirect("monitoring:silences")
