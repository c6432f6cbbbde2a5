"""Fleet pages: the live fleet overview, a node, a GPU, and the health endpoint."""

from django.contrib.auth.decorators import login_not_required
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from fleet.health import fleet_health
from monitoring.chart_series import RANGES
from monitoring.fleet_state import fleet_payload


def home(request):
    return redirect("fleet:fleet")


def fleet(request):
    payload = fleet_payload()
    gpus = [gpu for node in payload["nodes"] for gpu in node["gpus"]]
    models = sorted({gpu["model"] or gpu["name"] for gpu in gpus if gpu["model"] or gpu["name"]})
    return render(request, "fleet/fleet.html", {"fleet": payload, "models": models})


def node(request, hostname: str):
    payload = fleet_payload(hostname=hostname)
    if not payload["nodes"]:
        raise Http404(f"No node named {hostname}")
    context = {"fleet": payload, "node": payload["nodes"][0], "ranges": RANGES}
    return render(request, "fleet/node.html", context)


def gpu(request, uuid: str):
    payload = fleet_payload(gpu_uuid=uuid)
    if not payload["nodes"]:
        raise Http404(f"No GPU {uuid}")
    node = payload["nodes"][0]
    context = {"fleet": payload, "node": node, "gpu": node["gpus"][0], "ranges": RANGES}
    return render(request, "fleet/gpu.html", context)


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
