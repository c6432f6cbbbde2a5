"""An alert about someone's own use goes to the admins once it has been open for 24 hours."""

from datetime import timedelta

import pytest

from monitoring.alerts import engine
from monitoring.alerts.choices import AlertEventKind, AlertKind
from monitoring.alerts.models import Alert
from monitoring.notify.choices import TransportKind
from monitoring.notify.from_events import dispatch_pending
from monitoring.notify.models import Notification
from tests.support.monitoring import T0
from tests.support.telemetry import process, roll_up, stream

MIN = timedelta(minutes=1)


@pytest.fixture(autouse=True)
def no_data_closes_late(settings):
    """These tests jump a day ahead without streaming that day; alerts must not close as "no data" meanwhile."""
    settings.ALERT_NO_DATA_MIN = 7 * 24 * 60


def open_idle_alert(gpu, clock):
    forgotten = process(4242, "alice", started_at=T0 - timedelta(hours=2))
    stream(gpu, T0, T0 + 31 * MIN, util=0, processes=[forgotten])
    clock.move_to(T0 + 31 * MIN)
    roll_up(T0 + 31 * MIN)
    engine.evaluate()
    return Alert.objects.get(kind=AlertKind.IDLE_PROCESS)


def test_it_escalates_to_the_admins_after_24_hours(cast, gpu, clock):
    alert = open_idle_alert(gpu, clock)
    dispatch_pending()
    clock.move_to(alert.opened_at + timedelta(hours=23, minutes=59))
    engine.evaluate()
    assert Alert.objects.get().escalated_at is None

    clock.move_to(alert.opened_at + timedelta(hours=24))
    summary = engine.evaluate()
    dispatch_pending()
    alert.refresh_from_db()
    assert summary.escalated == [alert.key]
    assert alert.escalated_at == alert.opened_at + timedelta(hours=24)
    escalation = alert.events.get(kind=AlertEventKind.ESCALATED)
    told = Notification.objects.filter(event=escalation, transport=TransportKind.IN_APP)
    assert [n.user for n in told] == [cast["admin"]]


def test_it_escalates_only_once(cast, gpu, clock):
    alert = open_idle_alert(gpu, clock)
    for hours in (24, 25, 48):
        clock.move_to(alert.opened_at + timedelta(hours=hours))
        engine.evaluate()
    assert alert.events.filter(kind=AlertEventKind.ESCALATED).count() == 1


def test_the_escalation_window_is_a_setting(cast, gpu, clock, settings):
    settings.ALERT_ESCALATE_AFTER_H = 1
    alert = open_idle_alert(gpu, clock)
    clock.move_to(alert.opened_at + timedelta(hours=1))
    assert engine.evaluate().escalated == [alert.key]
