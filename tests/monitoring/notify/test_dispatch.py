"""Each alert event is dispatched once, to the right people, through the channels they chose."""

from datetime import timedelta

from django.utils import timezone

from monitoring.alerts import engine, lifecycle
from monitoring.alerts.choices import AlertEventKind, AlertKind
from monitoring.alerts.models import AlertEvent
from monitoring.notify import from_events as dispatch
from monitoring.notify.choices import TransportKind
from monitoring.notify.from_events import dispatch_event, dispatch_pending
from monitoring.notify.held import send_held_notifications
from monitoring.notify.models import Notification, NotificationPreference
from tests.monitoring.alerts.test_outbox import HotGpuRule
from tests.support.alerts import open_alert


def told(alert, transport=TransportKind.IN_APP) -> set[str]:
    rows = Notification.objects.filter(event__alert=alert, transport=transport)
    return {n.user.username for n in rows}


def test_an_owned_alert_goes_to_its_owner(cast):
    alert = open_alert(owner=cast["owner"])
    dispatch_pending()
    assert told(alert) == {"alice"} and told(alert, TransportKind.EMAIL) == {"alice"}


def test_a_project_alert_goes_to_the_project_members(cast):
    alert = open_alert(project=cast["project"], kind=AlertKind.BUDGET)
    dispatch_pending()
    assert told(alert) == {"alice", "bob"}


def test_an_alert_nobody_owns_goes_to_the_admins(cast):
    alert = open_alert(kind=AlertKind.GPU_TEMPERATURE)
    dispatch_pending()
    assert told(alert) == {"root"}


def test_an_event_is_dispatched_once(cast):
    alert = open_alert(owner=cast["owner"])
    event = alert.events.get()
    first, second = dispatch_event(event.pk), dispatch_event(event.pk)
    assert len(first) == 2 and second == []
    assert dispatch_pending() == 0


def test_acknowledging_tells_nobody(cast):
    alert = open_alert(owner=cast["owner"])
    dispatch_pending()
    lifecycle.acknowledge(alert, cast["owner"])
    dispatch_pending()
    assert not Notification.objects.filter(event__kind=AlertEventKind.ACKNOWLEDGED).exists()


def test_a_snoozed_alert_reaches_the_owner_in_app_only(cast):
    alert = open_alert(owner=cast["owner"])
    dispatch_pending()
    lifecycle.snooze(alert, cast["owner"], timedelta(hours=4))
    warned = AlertEvent.objects.create(alert=alert, kind=AlertEventKind.WARNED, new_status=alert.status, reason="x")
    dispatch_event(warned.pk)
    assert set(Notification.objects.filter(event=warned).values_list("transport", flat=True)) == {"inapp"}


def test_resolutions_are_emailed_only_to_those_who_asked(cast):
    NotificationPreference.objects.create(user=cast["teammate"], resolved=True)
    alert = open_alert(project=cast["project"], kind=AlertKind.BUDGET)
    lifecycle.resolve_alerts([alert], {alert.key: "The month ended."}, timezone.now())
    dispatch_pending()
    resolved = Notification.objects.filter(event__kind=AlertEventKind.RESOLVED)
    assert set(resolved.filter(transport=TransportKind.EMAIL).values_list("user__username", flat=True)) == {"bob"}
    assert set(resolved.filter(transport=TransportKind.IN_APP).values_list("user__username", flat=True)) == {
        "alice",
        "bob",
    }


def test_an_evaluation_tells_people_right_after_it_commits_and_only_once(
    cast, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(engine, "RULES", [HotGpuRule()])
    monkeypatch.setattr(dispatch.dispatch_event_task, "delay", dispatch.dispatch_event_task)  # the worker, inline
    for _ in range(2):  # the second evaluation finds the GPU still hot: nothing new to tell
        with django_capture_on_commit_callbacks(execute=True):
            engine.evaluate()
    (alert,) = AlertEvent.objects.values_list("alert", flat=True)
    rows = Notification.objects.filter(event__alert=alert).values_list("user__username", "transport")
    assert sorted(rows) == [("root", "email"), ("root", "inapp")]


def test_the_periodic_look_dispatches_events_whose_hand_off_was_lost(cast, clock):
    lost = open_alert(owner=cast["owner"])  # stored, and never handed off
    clock.shift(dispatch.LOST_AFTER / 2)
    send_held_notifications()
    assert told(lost) == set()  # its hand-off may still be on its way
    clock.shift(dispatch.LOST_AFTER)
    send_held_notifications()
    assert told(lost) == {"alice"} and told(lost, TransportKind.EMAIL) == {"alice"}
    assert dispatch_pending() == 0
