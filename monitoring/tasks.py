"""Celery tasks of the monitoring app. Each takes primary keys and re-fetches; the work lives in small modules."""

from celery import shared_task
from django.conf import settings

from monitoring.alerts import engine
from monitoring.alerts.reclaim import end_process
from monitoring.costs.rollup import rollup_usage as rollup
from monitoring.notify import dispatch
from monitoring.notify.deliver import deliver


@shared_task(ignore_result=True)
def evaluate_alerts() -> dict:
    """Every rule once (beat, every ALERT_EVAL_INTERVAL_S), then tell people."""
    summary = engine.evaluate()
    notified = dispatch.dispatch_pending()
    return {
        "opened": len(summary.opened),
        "resolved": len(summary.resolved),
        "escalated": len(summary.escalated),
        "notifications": notified,
        "skipped": summary.skipped,
    }


@shared_task(ignore_result=True)
def dispatch_event(event_pk: int) -> int:
    return len(dispatch.dispatch_event(event_pk))


@shared_task(bind=True, max_retries=None, ignore_result=True)
def deliver_notification(self, notification_pk: int) -> str:
    """Deliver through email or a webhook; transient failures come back with exponential backoff."""
    outcome = deliver(notification_pk)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status


@shared_task(ignore_result=True, soft_time_limit=settings.RECLAIM_GRACE_S + 60)
def reclaim_process(reclaim_pk: int) -> str:
    """Runs on the node worker (queue node.<hostname>): end an idle process after checking it is the same one."""
    return end_process(reclaim_pk)


@shared_task(ignore_result=True)
def rollup_usage() -> int:
    """GPU time per GPU, OS user and hour from process samples (beat, every minute)."""
    return rollup()
