"""The site's front door and its health endpoint."""

from django.contrib.auth.decorators import login_not_required
from django.http import JsonResponse
from django.shortcuts import redirect
from django.views.decorators.cache import never_cache

from fleet.healthz import fleet_health


def home(request):
    return redirect("fleet:fleet")


@login_not_required
@never_cache
def healthz(request):
    states = fleet_health()
    down = [part for part, state in states.items() if state != "up"]
    body = {"status": "down" if down else "up", "down": down, "parts": states}
    return JsonResponse(body, status=503 if down else 200)
