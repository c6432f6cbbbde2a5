"""Celery tasks: a run's share on a node worker (queue node.<hostname>) and the lost-run check (default queue)."""

from celery import shared_task
from django.conf import settings

from training import lost
from training.node import GPUsBusy, run_share


@shared_task(bind=True, name="training.tasks.run_on_node", acks_late=False, max_retries=None)
def run_on_node(self, run_node_id: int) -> str:
    # acks_late is off: a run can outlast the broker's visibility timeout, and a message handed to a
    # second worker would start it twice. A share whose worker dies is reported lost instead.
    try:
        return run_share(run_node_id, self.request.hostname or "")
    except GPUsBusy as busy:
        raise self.retry(exc=busy, countdown=settings.RUN_QUEUE_RETRY_S) from None


@shared_task(name="training.tasks.mark_lost_runs")
def mark_lost_runs() -> list[int]:
    return lost.mark_lost_runs()
