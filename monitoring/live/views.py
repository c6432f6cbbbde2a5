"""The live fleet pages: the overview, a node and a GPU, drawn from the same payload as /api/fleet/."""

from django.http import Http404
from django.shortcuts import render

from fleet.localtime import in_local_time
from inventory.models import GPU
from monitoring.health.history import HISTORY_DAYS, MEMORY_COUNTERS, MEMORY_LABELS, gpu_history
from monitoring.health.status import health_problems
from monitoring.live.charts import RANGES
from monitoring.live.state import fleet_payload
from monitoring.storage import latest


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


@in_local_time
def gpu(request, uuid: str):
    payload = fleet_payload(gpu_uuid=uuid)
    if not payload["nodes"]:
        raise Http404(f"No GPU {uuid}")
    node = payload["nodes"][0]
    context = {"fleet": payload, "node": node, "gpu": node["gpus"][0], "ranges": RANGES}
    return render(
        request, "fleet/gpu.html", {**context, **health_context(GPU.objects.select_related("state").get(uuid=uuid))}
    )


def health_context(gpu: GPU) -> dict:
    """The GPU page's Health card: problems now, memory counters and the history, newest first."""
    state = {key: getattr(latest.of(gpu), key) for key in MEMORY_COUNTERS}
    return {
        "health_problems": health_problems(state, gpu.burnins.judged().first()),
        "memory_health": [(MEMORY_LABELS[key], state[key]) for key in MEMORY_COUNTERS],
        "health_history": gpu_history(gpu),
        "health_days": HISTORY_DAYS,
    }
