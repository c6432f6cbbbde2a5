"""One notification per state change per person per channel, whatever the number of nodes, workers or dispatchers."""

import json
import threading

import pytest
from django.db import connection
from django.utils import timezone

from monitoring.alerts import lifecycle
from monitoring.alerts.choices import AlertEventKind, AlertKind
from monitoring.alerts.findings import Finding
from monitoring.alerts.models import AlertEvent
from monitoring.notify.choices import NotificationStatus, TransportKind
from monitoring.notify.dispatch import dispatch_event_task, dispatch_pending
from monitoring.notify.models import Notification, Webhook
from monitoring.notify.serializers import NotificationSerializer
from tests.support.alerts import Receiver, open_alert
from tests.support.telemetry import add_gpu
from tests.support.workers import wait_for

RUN_ID = 77


@pytest.fixture(scope="module")
def second_worker(celery_worker, django_db_blocker, tmp_path_factory):
    """A second real worker on the central queue, so two workers race for the same events."""
    from tests.support.processes import process_environment
    from tests.support.workers import CeleryWorker

    with django_db_blocker.unblock():
        env = process_environment(
            NOTIFY_RETRY_BASE_S="0.5", NOTIFY_MAX_RETRIES="3", WEBHOOK_ALLOWED_NETWORKS="127.0.0.1/32"
        )
        worker = CeleryWorker(["default"], env, tmp_path_factory.mktemp("worker-b") / "worker.log", name="tests-b")
    yield worker
    worker.stop()


@pytest.fixture
def receiver(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    server = Receiver()
    yield server
    server.close()


def idle_on(gpu, owner) -> Finding:
    return Finding(
        key=f"test:idle:{gpu.uuid}",
        kind=AlertKind.IDLE_PROCESS,
        title=f"Idle python (pid 4242) on {gpu.node.hostname} GPU {gpu.index}",
        message="It held 8.0 GiB while the GPU stayed under 5 % for 30 min.",
        owner_id=owner.pk,
        node_id=gpu.node_id,
        gpu_id=gpu.pk,
        details={"node": gpu.node.hostname, "gpu": gpu.uuid, "run_id": RUN_ID},
    )


def run_on_three_nodes_goes_idle(owner) -> list:
    gpus = [add_gpu(f"gpu-0{n}", 0) for n in (1, 2, 3)]
    return lifecycle.open_alerts([idle_on(gpu, owner) for gpu in gpus], timezone.now())


def dispatch_in_a_thread() -> threading.Thread:
    def dispatch():
        try:
            dispatch_pending()
        finally:
            connection.close()

    thread = threading.Thread(target=dispatch)
    thread.start()
    return thread


def settled() -> bool:
    """Every event claimed and every notification delivered or given up on."""
    return (
        not AlertEvent.objects.filter(processed=None).exists()
        and not Notification.objects.filter(status=NotificationStatus.PENDING).exists()
    )


@pytest.mark.django_db(transaction=True)
def test_a_run_idle_on_three_nodes_tells_its_owner_once_per_channel(
    celery_worker, second_worker, receiver, cast, gpu_models
):
    alice = cast["owner"]
    Webhook.objects.create(user=alice, name="lab", url=receiver.url)
    alerts = run_on_three_nodes_goes_idle(alice)
    events = list(AlertEvent.objects.filter(alert__in=alerts).values_list("pk", flat=True))
    for pk in events * 2:  # both workers race for every event, and two dispatchers here besides
        dispatch_event_task.delay(pk)
    for thread in [dispatch_in_a_thread(), dispatch_in_a_thread()]:
        thread.join(timeout=60)
    wait_for(settled, timeout_s=60, what="every event dispatched and delivered")

    notes = Notification.objects.filter(event__alert__in=alerts)
    assert sorted(notes.values_list("user__username", "transport")) == [
        ("alice", TransportKind.EMAIL),
        ("alice", TransportKind.IN_APP),
        ("alice", TransportKind.WEBHOOK),
    ]
    assert all(sorted(n.also + [n.event.alert_id]) == sorted(a.pk for a in alerts) for n in notes)
    ((_, body),) = receiver.requests
    data = json.loads(body)
    assert data["text"].startswith("*Idle python (pid 4242) on gpu-01 GPU 0 and 2 more*")
    assert {o["title"] for o in data["also"]} == {f"Idle python (pid 4242) on gpu-0{n} GPU 0" for n in (2, 3)}
    in_app = NotificationSerializer(notes.get(transport=TransportKind.IN_APP)).data
    assert in_app["headline"].endswith(" and 2 more") and len(in_app["also"]) == 2


@pytest.mark.django_db(transaction=True)
def test_two_dispatchers_at_once_create_each_notification_once(cast):
    alerts = [open_alert(project=cast["project"], kind=AlertKind.BUDGET) for _ in range(5)]
    threads = [dispatch_in_a_thread() for _ in range(3)]
    for thread in threads:
        thread.join(timeout=60)
    notes = Notification.objects.filter(event__alert__in=alerts)
    per_change = notes.values_list("event_id", "user__username", "transport")
    assert len(per_change) == len(set(per_change)) == 5 * 2 * 2  # 5 alerts, alice and bob, in-app and email


def test_an_alert_back_within_a_day_says_so_in_the_app_and_sends_no_new_mail(cast, receiver):
    alice = cast["owner"]
    Webhook.objects.create(user=alice, name="lab", url=receiver.url)
    alert = open_alert(owner=alice)
    dispatch_pending()
    for _ in range(2):
        lifecycle.resolve_alerts([alert], {alert.key: "The process is working again."}, timezone.now())
        lifecycle.open_alerts(
            [Finding(key=alert.key, kind=alert.kind, title=alert.title, owner_id=alice.pk)], timezone.now()
        )
        dispatch_pending()
        alert.refresh_from_db()
    opened = Notification.objects.filter(event__alert=alert, event__kind=AlertEventKind.OPENED)
    assert opened.filter(transport=TransportKind.EMAIL).count() == 1
    assert opened.filter(transport=TransportKind.WEBHOOK).count() == 1
    in_app = [NotificationSerializer(n).data["headline"] for n in opened.filter(transport=TransportKind.IN_APP)]
    assert sorted(in_app) == sorted(
        [
            alert.title,
            f"Idle again (2nd time in 24 h): {alert.title}",
            f"Idle again (3rd time in 24 h): {alert.title}",
        ]
    )
