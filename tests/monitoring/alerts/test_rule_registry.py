"""The alert engine's RULES list is the one place a rule is switched on, and each rule says whether it escalates."""

from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind, alert_kinds
from monitoring.alerts.models import Alert


def test_every_alert_kind_belongs_to_exactly_one_rule():
    kinds = [kind for rule in engine.RULES for kind in engine.kinds_of(rule)]
    assert sorted(kinds) == sorted(AlertKind.values)


def test_the_alerts_about_someones_own_use_escalate_and_the_others_do_not():
    assert engine.ESCALATING == {
        AlertKind.IDLE_PROCESS,
        AlertKind.BOOKING_IDLE,
        AlertKind.SQUATTING,
        AlertKind.RUN_OVERDUE,
    }


def test_the_alerts_kind_field_offers_every_kind_read_when_needed():
    field = Alert._meta.get_field("kind")
    assert list(field.choices) == AlertKind.choices
    assert field.deconstruct()[3]["choices"] is alert_kinds  # a callable in migrations, not a frozen list
