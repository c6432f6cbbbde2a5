"""Runs whose node worker stopped sending heartbeats are lost, and their GPUs free again."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from training import broadcast
from training.choices import RunNodeStatus, RunStatus
from training.models import IllegalTransition, Run, RunNode
from training.serializers import state_payload


def heartbeat_deadline():
    missed = settings.RUN_MISSED_HEARTBEATS * settings.RUN_HEARTBEAT_S
    return timezone.now() - timedelta(seconds=missed)


def mark_lost_runs() -> list[int]:
    """End every running run with a node share silent for RUN_MISSED_HEARTBEATS heartbeats; their ids."""
    stale = RunNode.objects.filter(
        status__in=[RunNodeStatus.STARTING, RunNodeStatus.RUNNING],
        heartbeat_at__lt=heartbeat_deadline(),
        run__status__in=RunStatus.active(),
    ).select_related("node")
    lost = []
    for part in stale:
        if mark_lost(part):
            lost.append(part.run_id)
    return lost


def mark_lost(part: RunNode) -> bool:
    silent = (timezone.now() - part.heartbeat_at).total_seconds()
    error = (
        f"The node worker on {part.node.hostname} ({part.worker or 'unknown'}) sent no heartbeat for "
        f"{silent:.0f} s; its processes are presumed gone."
    )
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=part.run_id)
        try:
            run.finish(RunStatus.LOST, error=error)
        except IllegalTransition:
            return False
        RunNode.objects.filter(pk=part.pk).update(status=RunNodeStatus.LOST)
        broadcast.send_after_commit(run.pk, state_payload(run))
    return True
