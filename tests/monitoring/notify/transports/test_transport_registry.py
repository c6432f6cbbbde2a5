"""The transport registry is the one list of notification kinds."""

from django.db import models

from monitoring.notify import transports
from monitoring.notify.choices import TransportKind
from monitoring.notify.models import Notification
from monitoring.notify.transports import TRANSPORTS, Transport


def test_each_registered_kind_is_a_transport_kind_with_its_label():
    assert [(kind.value, kind.label) for kind in TransportKind] == transports.choices()
    assert TransportKind.IN_APP == "inapp" and TransportKind.EMAIL == "email" and TransportKind.WEBHOOK == "webhook"


def test_the_notification_field_offers_exactly_the_registered_kinds():
    field = Notification._meta.get_field("transport")
    assert list(field.choices) == transports.choices()


def test_every_registered_path_names_a_transport_class():
    from django.utils.module_loading import import_string

    for kind, registered in TRANSPORTS.items():
        assert issubclass(import_string(registered.path), Transport), kind


def test_a_transport_added_to_the_registry_becomes_a_choice(monkeypatch):
    monkeypatch.setitem(TRANSPORTS, "pager", transports.Registered("PAGER", "Pager", "tests.nowhere.Pager"))
    field = Notification._meta.get_field("transport")
    assert ("pager", "Pager") in list(field.choices)
    assert isinstance(field, models.CharField)
