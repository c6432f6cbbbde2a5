"""Fleet pages: the fleet overview and the health endpoint."""

from django.contrib.auth.decorators import login_not_required
from django.db.models import Prefetch
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from fleet.health import fleet_health
from fleet.models import GPU, Node


def home(request):
    return redirect("fleet:fleet")


def fleet(request):
    gpus = GPU.objects.select_related("model").order_by("index")
    nodes = Node.objects.prefetch_related(Prefetch("gpus", queryset=gpus))
    return render(request, "fleet/fleet.html", {"nodes": nodes})


def placeholder(title: str, blurb: str):
    """A page of the navigation whose feature has not been switched on in this build."""

    def view(request):
        return render(request, "section.html", {"title": title, "blurb": blurb})

    return view


@login_not_required
@never_cache
def healthz(request):
    states = fleet_health()
    down = [part for part, state in states.items() if state != "up"]
    body = {"status": "down" if down else "up", "down": down, "parts": states}
    return JsonResponse(body, status=503 if down else 200)
