"""The scrape endpoints; which one to use is in docs/telemetry.md#prometheus."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET

from inventory.models import Node
from monitoring.prometheus import server
from monitoring.prometheus.access import refuse
from monitoring.prometheus.exposition import CONTENT_TYPE, document
from monitoring.prometheus.fleet_series import fleet_families, node_up
from monitoring.prometheus.gpus import fresh_gpus, gpu_families


@login_not_required
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Every node's GPUs, the fleet's series and this server's own, for a single static target."""
    if (refusal := refuse(request)) is not None:
        return refusal
    gpus = fresh_gpus()
    lines = gpu_families(gpus) + fleet_families(gpus) + node_up(list(Node.objects.order_by("hostname")))
    return HttpResponse(document(lines) + server.exposition(), content_type=CONTENT_TYPE)


@login_not_required
@require_GET
def node_metrics(request: HttpRequest, hostname: str) -> HttpResponse:
    """One node's GPUs, as the dcgm-exporter on that node would answer, plus the fleet's series for them."""
    if (refusal := refuse(request)) is not None:
        return refusal
    node = get_object_or_404(Node, hostname=hostname)
    gpus = fresh_gpus([node.pk])
    return HttpResponse(
        document(gpu_families(gpus) + fleet_families(gpus) + node_up([node])), content_type=CONTENT_TYPE
    )


@login_not_required
@require_GET
def server_metrics(request: HttpRequest) -> HttpResponse:
    if (refusal := refuse(request)) is not None:
        return refusal
    return HttpResponse(server.exposition(), content_type=CONTENT_TYPE)


@login_not_required
@require_GET
def targets(request: HttpRequest) -> HttpResponse:
    """Prometheus HTTP service discovery: one target per node (its instance label is the node) and the server."""
    if (refusal := refuse(request)) is not None:
        return refusal
    address = request.get_host()
    groups = [
        {
            "targets": [address],
            "labels": {
                "__metrics_path__": reverse("monitoring:metrics_node", args=[node.hostname]),
                "instance": node.hostname,
                "Hostname": node.hostname,
            },
        }
        for node in Node.objects.order_by("hostname")
    ]
    groups.append(
        {
            "targets": [address],
            "labels": {"__metrics_path__": reverse("monitoring:metrics_server"), "instance": "server"},
        }
    )
    return JsonResponse(groups, safe=False)
