"""One notification per state change per person per channel, whatever the number of nodes, workers or dispatchers."""

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from monitoring.alerts import lifecycle
from monitoring.alerts.choices import AlertEventKind, AlertKind
from monitoring.alerts.findings import Finding
from monitoring.alerts.models import AlertEvent
from monitoring.notify.choices import NotificationStatus, TransportKind
from monitoring.notify.from_events import dispatch_event_task, dispatch_pending
from monitoring.notify.held import send_held, send_held_notifications
from monitoring.notify.models import Notification
from monitoring.notify.serializers import NotificationSerializer
from monitoring.notify.transports.webhook.models import Webhook
from tests.support.alerts import Receiver, open_alert
from tests.support.monitoring import T0
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
            NOTIFY_RETRY_BASE_S="0.5",
            NOTIFY_MAX_RETRIES="3",
            WEBHOOK_ALLOWED_NETWORKS="127.0.0.1/32",
            NOTIFY_GROUP_WINDOW_S="3",
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
    celery_worker, second_worker, receiver, cast, gpu_models, settings
):
    settings.NOTIFY_GROUP_WINDOW_S = 3  # as on the workers: the email and the webhook wait 3 s for more
    alice = cast["owner"]
    Webhook.objects.create(user=alice, name="lab", url=receiver.url)
    alerts = run_on_three_nodes_goes_idle(alice)
    events = list(AlertEvent.objects.filter(alert__in=alerts).values_list("pk", flat=True))
    for pk in events * 2:  # both workers race for every event, and two dispatchers here besides
        dispatch_event_task.delay(pk)
    for thread in [dispatch_in_a_thread(), dispatch_in_a_thread()]:
        thread.join(timeout=60)
    wait_for(lambda: not AlertEvent.objects.filter(processed=None).exists(), timeout_s=60, what="every event claimed")
    closes = max(Notification.objects.filter(event__alert__in=alerts).values_list("group_until", flat=True))
    wait_for(lambda: timezone.now() > closes, timeout_s=10, what="the group window's end")
    for _ in range(2):  # both workers look for held messages at once
        send_held_notifications.delay()
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


# Across evaluations: the alerts of one run that change a minute apart are told once per person and channel


def idle_of_run(gpu, owner, run_id: int) -> Finding:
    finding = idle_on(gpu, owner)
    return Finding(**{**finding.__dict__, "key": f"test:idle:{run_id}:{gpu.uuid}", "details": {
        **finding.details, "run_id": run_id}})  # fmt: skip


def opens_in_its_own_evaluation(clock, moment, finding) -> None:
    clock.move_to(moment)
    lifecycle.open_alerts([finding], timezone.now())
    dispatch_pending()


def per_channel(user) -> list[tuple]:
    return sorted(Notification.objects.filter(user=user).values_list("transport", flat=True))


def test_a_run_going_idle_over_four_evaluations_tells_each_channel_once_counting_all_four(
    cast, clock, receiver, mailoutbox, gpu_models, settings
):
    settings.NOTIFY_GROUP_WINDOW_S = 300
    alice = cast["owner"]
    Webhook.objects.create(user=alice, name="lab", url=receiver.url)
    gpus = [add_gpu("gpu-01", index) for index in range(4)]
    for minute, gpu in enumerate(gpus):  # one GPU more each evaluation, a minute apart
        opens_in_its_own_evaluation(clock, T0 + timedelta(minutes=minute), idle_of_run(gpu, alice, RUN_ID))
    assert per_channel(alice) == [TransportKind.EMAIL, TransportKind.IN_APP, TransportKind.WEBHOOK]
    in_app = NotificationSerializer(Notification.objects.get(user=alice, transport=TransportKind.IN_APP)).data
    assert in_app["headline"] == "Idle python (pid 4242) on gpu-01 GPU 0 and 3 more"

    clock.move_to(T0 + timedelta(minutes=4))
    assert send_held() == 0 and mailoutbox == [] and receiver.requests == []  # the window is still open
    clock.move_to(T0 + timedelta(minutes=5, seconds=1))
    assert send_held() == 2 and send_held() == 0
    (mail,) = mailoutbox
    assert mail.subject == "[GPU Fleet] Idle python (pid 4242) on gpu-01 GPU 0 and 3 more"
    assert all(f"Idle python (pid 4242) on gpu-01 GPU {i}" in mail.body for i in (1, 2, 3))
    ((_, body),) = receiver.requests
    data = json.loads(body)
    assert data["text"].startswith("*Idle python (pid 4242) on gpu-01 GPU 0 and 3 more*") and len(data["also"]) == 3

    opens_in_its_own_evaluation(clock, T0 + timedelta(minutes=6), idle_of_run(add_gpu("gpu-02", 0), alice, RUN_ID))
    assert len(per_channel(alice)) == 6  # after the window (and the message sent) a change notifies afresh


def test_alerts_of_two_runs_are_told_apart(cast, clock, mailoutbox, gpu_models, settings):
    settings.NOTIFY_GROUP_WINDOW_S = 300
    alice = cast["owner"]
    opens_in_its_own_evaluation(clock, T0, idle_of_run(add_gpu("gpu-01", 0), alice, 77))
    opens_in_its_own_evaluation(clock, T0 + timedelta(minutes=1), idle_of_run(add_gpu("gpu-01", 1), alice, 78))
    assert per_channel(alice) == [TransportKind.EMAIL] * 2 + [TransportKind.IN_APP] * 2
    clock.move_to(T0 + timedelta(minutes=6))
    assert send_held() == 2
    assert sorted(m.subject for m in mailoutbox) == [
        "[GPU Fleet] Idle python (pid 4242) on gpu-01 GPU 0",
        "[GPU Fleet] Idle python (pid 4242) on gpu-01 GPU 1",
    ]


def test_a_read_notification_takes_no_more_alerts_but_the_unsent_email_still_does(cast, clock, gpu_models, settings):
    settings.NOTIFY_GROUP_WINDOW_S = 300
    alice = cast["owner"]
    opens_in_its_own_evaluation(clock, T0, idle_of_run(add_gpu("gpu-01", 0), alice, RUN_ID))
    Notification.objects.filter(user=alice, transport=TransportKind.IN_APP).update(read_at=timezone.now())
    opens_in_its_own_evaluation(clock, T0 + timedelta(minutes=1), idle_of_run(add_gpu("gpu-01", 1), alice, RUN_ID))
    assert per_channel(alice) == [TransportKind.EMAIL, TransportKind.IN_APP, TransportKind.IN_APP]
    assert len(Notification.objects.get(user=alice, transport=TransportKind.EMAIL).also) == 1


def test_without_a_group_window_each_evaluation_notifies(cast, clock, gpu_models, settings):
    settings.NOTIFY_GROUP_WINDOW_S = 0
    alice = cast["owner"]
    opens_in_its_own_evaluation(clock, T0, idle_of_run(add_gpu("gpu-01", 0), alice, RUN_ID))
    opens_in_its_own_evaluation(clock, T0 + timedelta(minutes=1), idle_of_run(add_gpu("gpu-01", 1), alice, RUN_ID))
    assert len(per_channel(alice)) == 4
    assert not Notification.objects.filter(deliver_after__isnull=False).exists()


def test_a_reclaim_warning_of_a_run_is_never_held_for_its_group(cast, clock, gpu_models, settings):
    settings.NOTIFY_GROUP_WINDOW_S = 300
    alice = cast["owner"]
    (alert,) = lifecycle.open_alerts([idle_of_run(add_gpu("gpu-01", 0), alice, RUN_ID)], timezone.now())
    clock.move_to(T0 + timedelta(minutes=1))
    lifecycle.advance_stage(alert, 1, AlertEventKind.WARNED, "It will be ended at 13:00 UTC.", timezone.now())
    dispatch_pending()
    warned = Notification.objects.filter(user=alice, event__kind=AlertEventKind.WARNED)
    assert warned.filter(transport=TransportKind.EMAIL, deliver_after=None, group_until=None).count() == 1
