"""Alert events are the outbox: an evaluation that stored some says so after it commits, and alerts never
call the notifier."""

import pytest

from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind
from monitoring.alerts.findings import Finding, RuleResult
from monitoring.alerts.models import AlertEvent
from monitoring.alerts.outbox import events_recorded
from monitoring.alerts.rules.base import Rule
from tests.test_import_cycles import import_graph


class HotGpuRule(Rule):
    """A stand-in rule: one hot GPU, found at every evaluation."""

    kind = AlertKind.GPU_TEMPERATURE

    def evaluate(self, now, open_alerts) -> RuleResult:
        return RuleResult(findings=[Finding(key="hot:1", kind=self.kind, title="GPU 0 is hot")])


@pytest.fixture
def announced(monkeypatch):
    monkeypatch.setattr(engine, "RULES", [HotGpuRule()])
    heard = []

    def listener(sender, event_pk, **kwargs):
        heard.append(event_pk)

    events_recorded.connect(listener, weak=False)
    yield heard
    events_recorded.disconnect(listener)


def test_an_evaluation_that_stored_events_announces_one_of_them_after_it_commits(
    db, announced, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        engine.evaluate()
        assert announced == []  # nothing is announced before the commit
    for callback in callbacks:
        callback()
    assert announced == [AlertEvent.objects.get(kind="opened").pk]


def test_an_evaluation_that_changed_nothing_announces_nothing(db, announced, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        engine.evaluate()
    announced.clear()
    with django_capture_on_commit_callbacks(execute=True):
        engine.evaluate()  # the same hot GPU: still open, no new event
    assert announced == []


def test_no_module_of_the_alerts_imports_the_notifier():
    graph = import_graph()
    reaching = {m: sorted(t for t in targets if t.startswith("monitoring.notify")) for m, targets in graph.items()}
    assert {m: t for m, t in reaching.items() if m.startswith("monitoring.alerts") and t} == {}
