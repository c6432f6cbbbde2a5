"""The GPU and node pages' "Burn in" buttons and the Django admin's actions (admins): queue the burn-ins,
say so with links, go back."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from inventory.models import GPU, Node
from monitoring.health.burnin_launch import BurnInRefused, burn_in
from training.models import Run


@require_POST
def burn_in_gpu(request, uuid: str):
    gpu = get_object_or_404(GPU.objects.select_related("node"), uuid=uuid)
    start(request, [gpu])
    return redirect("fleet:gpu", uuid)


@require_POST
def burn_in_node(request, hostname: str):
    node = get_object_or_404(Node, hostname=hostname)
    start(request, node.gpus.select_related("node"))
    return redirect("fleet:node", hostname)


def start(request, gpus) -> None:
    """Queue the burn-ins and leave the outcome as a message for the page it redirects to (the pages' buttons
    and the Django admin's actions on GPUs and nodes)."""
    try:
        runs = burn_in(request.user, gpus)
    except BurnInRefused as refused:
        if refused.forbidden:
            raise PermissionDenied(str(refused)) from None
        messages.error(request, f"No burn-in was queued. {refused}")
        return
    messages.success(request, queued_message(runs))


def queued_message(runs) -> str:
    """ "Burn-in queued on gpu-07:0 (run #12), …", each run linked."""
    gpu_of = {row.run_id: row.gpu for row in Run.gpus.through.objects.filter(run__in=runs).select_related("gpu__node")}
    links = format_html_join(
        ", ",
        '{} (<a href="{}">run #{}</a>)',
        ((gpu_of[run.pk], reverse("training:run", args=[run.pk]), run.pk) for run in runs),
    )
    what = "Burn-ins" if len(runs) > 1 else "Burn-in"
    return format_html("{} queued on {}. Each GPU's health record follows when its run ends.", what, links)
