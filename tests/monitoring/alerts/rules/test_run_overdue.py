"""A run that takes far longer than finished runs like it alerts its owner, and resolves when it ends."""

from datetime import timedelta

from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind, AlertStatus
from monitoring.alerts.models import Alert
from tests.support.monitoring import T0
from training.choices import RunStatus
from training.models import Run


def a_run(cast, gpu, status, started, finished=None, epochs=10) -> Run:
    run = Run.objects.create(
        owner=cast["owner"],
        project=cast["project"],
        name="digits",
        workload="digits_cnn",
        strategy="single",
        hyperparameters={"epochs": epochs},
        status=status,
        started_at=started,
        finished_at=finished,
    )
    run.gpus.add(gpu)
    return run


def history(cast, gpu):
    """Three finished runs of 10 epochs: 20, 20 and 40 minutes; the median is 2 min per epoch."""
    yesterday = T0 - timedelta(days=1)
    for minutes in (20, 20, 40):
        a_run(cast, gpu, RunStatus.SUCCEEDED, yesterday, yesterday + timedelta(minutes=minutes))


def test_a_run_past_one_and_a_half_times_its_expected_time_alerts_its_owner(cast, gpu, clock):
    history(cast, gpu)
    run = a_run(cast, gpu, RunStatus.RUNNING, T0)
    clock.move_to(T0 + timedelta(minutes=29))
    engine.evaluate()
    assert not Alert.objects.filter(kind=AlertKind.RUN_OVERDUE).exists()
    clock.move_to(T0 + timedelta(minutes=31))
    engine.evaluate()
    alert = Alert.objects.get(kind=AlertKind.RUN_OVERDUE)
    assert alert.owner == cast["owner"] and alert.details["run"] == run.pk
    assert "runs like it took 20 min (median of 3)" in alert.message
    assert "$1.29" in alert.message  # 31 min of an A100 80GB at $2.50/h


def test_the_alert_resolves_when_the_run_ends(cast, gpu, clock):
    history(cast, gpu)
    run = a_run(cast, gpu, RunStatus.RUNNING, T0)
    clock.move_to(T0 + timedelta(minutes=40))
    engine.evaluate()
    run.finish(RunStatus.CANCELLED)
    engine.evaluate()
    alert = Alert.objects.get()
    assert alert.status == AlertStatus.RESOLVED and alert.resolution == "The run ended (cancelled)."


def test_a_run_without_history_has_no_expected_time(cast, gpu, clock):
    a_run(cast, gpu, RunStatus.RUNNING, T0)
    clock.move_to(T0 + timedelta(days=2))
    engine.evaluate()
    assert not Alert.objects.filter(kind=AlertKind.RUN_OVERDUE).exists()
