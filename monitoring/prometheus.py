"""/metrics: the latest GPU state in Prometheus text format, with dcgm-exporter's metric names and labels.

So dashboards and alert rules written for dcgm-exporter work unchanged. Only GPUs that reported
within the offline limit are listed, and a value a GPU could not report is left out, never 0.
Access: `Authorization: Bearer <METRICS_TOKEN>`, or a staff session.
"""

import hmac
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from fleet.choices import NodeStatus
from fleet.models import GPU, Node
from monitoring.agent.metrics import METRICS
from monitoring.ingest.presence import silence_limit

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# dcgm-exporter's units where ours differ (it reports PCIe throughput in bytes/s).
SCALE = {"pcie_tx_kib_s": 1024, "pcie_rx_kib_s": 1024}
COUNTERS = {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}
FB_FREE = ("DCGM_FI_DEV_FB_FREE", "Device (framebuffer) memory free, in MiB.")
NODE_UP = ("fleet_node_up", "1 while the node's agent reports (within 3 intervals), 0 otherwise.")


@login_not_required
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    refusal = refuse(request)
    if refusal is not None:
        return refusal
    return HttpResponse(render(fresh_gpus(), Node.objects.order_by("hostname")), content_type=CONTENT_TYPE)


def refuse(request: HttpRequest) -> HttpResponse | None:
    """None when the caller may read /metrics; otherwise the 401 or 403 to answer."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if settings.METRICS_TOKEN and scheme.lower() == "bearer":
        if hmac.compare_digest(token.strip().encode(), settings.METRICS_TOKEN.encode()):
            return None
        return unauthorized("wrong bearer token")
    if request.user.is_authenticated:
        return None if request.user.is_staff else HttpResponse("Staff only.\n", status=403, content_type=CONTENT_TYPE)
    return unauthorized("send Authorization: Bearer <METRICS_TOKEN>" if settings.METRICS_TOKEN else "staff login only")


def unauthorized(why: str) -> HttpResponse:
    response = HttpResponse(f"Unauthorized: {why}.\n", status=401, content_type=CONTENT_TYPE)
    response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def fresh_gpus() -> list[GPU]:
    """GPUs of nodes heard from within the offline limit (server clock) that were in the node's latest reports."""
    limit = silence_limit() + timedelta(seconds=1)
    gpus = GPU.objects.filter(node__last_seen__gte=timezone.now() - limit, last_sample_at__isnull=False)
    gpus = list(gpus.select_related("node").order_by("node__hostname", "index"))
    newest = {}
    for gpu in gpus:
        newest[gpu.node_id] = max(newest.get(gpu.node_id, gpu.last_sample_at), gpu.last_sample_at)
    # Compared on the agent's clock: a GPU the node stopped reporting drops out.
    return [gpu for gpu in gpus if gpu.last_sample_at >= newest[gpu.node_id] - limit]


def render(gpus: list[GPU], nodes) -> str:
    lines = []
    for metric in METRICS:
        if metric.dcgm:
            samples = [(labels(gpu), scaled(metric.key, getattr(gpu, metric.key))) for gpu in gpus]
            kind = "counter" if metric.dcgm in COUNTERS else "gauge"
            lines += family(metric.dcgm, metric.help, kind, samples)
    free = [(labels(gpu), gpu.memory_total_mib - gpu.mem_used_mib) for gpu in gpus if has_free_memory(gpu)]
    lines += family(*FB_FREE, "gauge", free)
    up = [(f'Hostname="{escape(node.hostname)}"', int(node.status != NodeStatus.OFFLINE)) for node in nodes]
    lines += family(*NODE_UP, "gauge", up)
    return "\n".join(lines) + "\n"


def family(name: str, help_text: str, kind: str, samples: list[tuple[str, float | None]]) -> list[str]:
    present = [(label, value) for label, value in samples if value is not None]
    if not present:
        return []
    lines = [f"# HELP {name} {help_text.replace(chr(92), chr(92) * 2).replace(chr(10), ' ')}", f"# TYPE {name} {kind}"]
    return lines + [f"{name}{{{label}}} {number(value)}" for label, value in present]


def labels(gpu: GPU) -> str:
    pairs = {
        "gpu": str(gpu.index),
        "UUID": gpu.uuid,
        "device": f"nvidia{gpu.index}",
        "modelName": gpu.name,
        "Hostname": gpu.node.hostname,
    }
    return ",".join(f'{key}="{escape(value)}"' for key, value in pairs.items())


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def scaled(key: str, value: float | None) -> float | None:
    return None if value is None else value * SCALE.get(key, 1)


def has_free_memory(gpu: GPU) -> bool:
    return gpu.memory_total_mib is not None and gpu.mem_used_mib is not None


def number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
