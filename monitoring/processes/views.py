"""The Processes page: every GPU process of the fleet, live, and the form that asks to end one."""

from django.contrib import messages
from django.http import HttpResponseBadRequest, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from monitoring.live.state import fleet_payload
from monitoring.processes.api import describe
from monitoring.processes.stopping import StopRefused, request_stop


def processes(request):
    payload = fleet_payload()
    gpus = [gpu for node in payload["nodes"] for gpu in node["gpus"]]
    context = {
        "fleet": payload,
        "nodes": [node["hostname"] for node in payload["nodes"]],
        "models": sorted({gpu["model"] or gpu["name"] for gpu in gpus if gpu["model"] or gpu["name"]}),
        "viewer": {"user": request.user.get_username(), "admin": request.user.is_staff},
    }
    return render(request, "monitoring/processes.html", context)


@require_POST
def stop(request):
    pid = request.POST.get("pid", "")
    run = request.POST.get("run", "")
    if not pid.isdigit() or not request.POST.get("gpu") or (run and not run.isdigit()):
        return HttpResponseBadRequest("Give the GPU's UUID and the process id.")
    try:
        ended = request_stop(request.user, request.POST["gpu"], int(pid), int(run) if run else None)
    except StopRefused as refused:
        if refused.forbidden:
            return HttpResponseForbidden(str(refused))
        messages.error(request, str(refused))
    else:
        messages.success(request, describe(ended))
    return redirect("monitoring:processes")
