"""Celery tasks: a run's share on a node worker (queue node.<hostname>); the lost-run check and the queue reconciler."""

from dataclasses import asdict

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from training.dispatch import lost, reconcile
from training.launching import scheduled
from training.models import RunNode
from training.node.worker import GPUsBusy, run_share
from training.run_files import retention
from training.sweeps import placing


@shared_task(bind=True, name="training.tasks.run_on_node", acks_late=False, max_retries=None)
def run_on_node(self, run_node_id: int) -> str:
    # acks_late is off: a run can outlast the broker's visibility timeout, and a message handed to a
    # second worker would start it twice. A share whose worker dies is reported lost instead.
    # Every look at the share is recorded, so the reconciler tells a share that waits for its GPUs from a
    # lost message.
    RunNode.objects.filter(pk=run_node_id).update(seen_at=timezone.now())
    try:
        return run_share(run_node_id, self.request.hostname or "")
    except GPUsBusy as busy:
        raise self.retry(exc=busy, countdown=settings.RUN_QUEUE_RETRY_S) from None


@shared_task(name="training.tasks.mark_lost_runs")
def mark_lost_runs() -> list[int]:
    return lost.mark_lost_runs()


@shared_task(name="training.tasks.reconcile_queued_runs")
def reconcile_queued_runs() -> dict[str, list[int]]:
    return reconcile.reconcile_queued_runs()


@shared_task(name="training.tasks.start_scheduled_runs")
def start_scheduled_runs() -> list[int]:
    return scheduled.start_due_runs()


@shared_task(name="training.tasks.dispatch_sweeps")
def dispatch_sweeps() -> list[int]:
    return placing.dispatch_all()


@shared_task(name="training.tasks.delete_expired_run_files")
def delete_expired_run_files() -> dict:
    return asdict(retention.delete_expired_run_files())


@shared_task(name="training.tasks.delete_old_checkpoints")
def delete_old_checkpoints() -> dict:
    """The checkpoints' own task before RUN_FILES_RETENTION_DAYS covered them. A beat schedule stored by that
    version keeps its entry (django-celery-beat never removes one), so the name stays and does the same."""
    return delete_expired_run_files()
