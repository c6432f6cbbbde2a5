"""Email: alerts land in the owner's inbox through Django's mail backend (locmem in tests)."""

from django.core import mail

from monitoring.alerts.choices import AlertSeverity
from monitoring.notify.choices import NotificationStatus, TransportKind
from monitoring.notify.deliver import deliver
from monitoring.notify.from_events import dispatch_event
from monitoring.notify.models import Notification, NotificationPreference
from tests.support.alerts import open_alert


def emails_for(alert):
    dispatch_event(alert.events.get().pk)
    return Notification.objects.filter(event__alert=alert, transport=TransportKind.EMAIL)


def test_an_alert_lands_in_the_owner_inbox(cast):
    note = emails_for(open_alert(owner=cast["owner"])).get()
    assert deliver(note.pk).status == NotificationStatus.SENT
    (message,) = mail.outbox
    assert message.to == ["alice@example.org"]
    assert message.subject == "[GPU Fleet] Idle python (pid 4242) on gpu-01 GPU 0"
    assert "holds 8.0 GiB" in message.body
    assert "http://localhost:8000/alerts/" in message.body


def test_people_who_turned_email_off_get_none(cast):
    NotificationPreference.objects.create(user=cast["owner"], email=False)
    assert not emails_for(open_alert(owner=cast["owner"])).exists()


def test_alerts_below_the_chosen_severity_are_not_emailed(cast):
    NotificationPreference.objects.create(user=cast["owner"], email_min_severity=AlertSeverity.CRITICAL)
    assert not emails_for(open_alert(owner=cast["owner"])).exists()
    assert emails_for(open_alert(owner=cast["owner"], severity=AlertSeverity.CRITICAL)).exists()


def test_a_person_without_an_address_gets_in_app_only(cast):
    cast["owner"].email = ""
    cast["owner"].save()
    alert = open_alert(owner=cast["owner"])
    assert not emails_for(alert).exists()
    assert Notification.objects.filter(event__alert=alert, transport=TransportKind.IN_APP).count() == 1
