"""The run list, a run's page, cancel and comparison: researchers see their projects' runs, change their own."""

import pytest

from tests.training.conftest import gpus_of
from training.choices import RunStatus
from training.models import Run, RunLog, RunMetric

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_run(cast, quiet_node):
    run = Run.objects.create(
        owner=cast["owner"],
        project=cast["project"],
        name="alice-cnn",
        workload="digits_cnn",
        strategy="single",
        hyperparameters={"epochs": 4, "lr": 0.003},
    )
    run.gpus.set(gpus_of(quiet_node, 1))
    return run


def test_the_list_shows_my_runs_and_my_projects_runs(client, cast, alice_run):
    Run.objects.create(owner=cast["outsider"], name="eve-private", workload="digits_cnn", strategy="single")
    client.force_login(cast["teammate"])
    mine = client.get("/runs/").content.decode()
    project = client.get("/runs/?show=project").content.decode()
    assert "alice-cnn" not in mine and "You have not launched a run yet" in mine
    assert "alice-cnn" in project and "eve-private" not in project


def test_the_running_tab_lists_unfinished_runs_only(client, cast, alice_run):
    done = Run.objects.create(owner=cast["owner"], name="old-one", workload="digits_cnn", strategy="single")
    done.finish(RunStatus.CANCELLED)
    client.force_login(cast["owner"])
    body = client.get("/runs/?show=running").content.decode()
    assert "alice-cnn" in body and "old-one" not in body


def test_the_run_page_shows_progress_logs_and_na_for_what_is_missing(client, cast, alice_run):
    RunMetric.objects.create(run=alice_run, ts=alice_run.created, step=10, epoch=1, loss=0.5, accuracy=None)
    RunLog.objects.create(run=alice_run, line="epoch 1/4: held-out accuracy 0.9000")
    Run.objects.filter(pk=alice_run.pk).update(step=10, epoch=1, loss=0.5)
    client.force_login(cast["teammate"])
    body = client.get(f"/runs/{alice_run.pk}/").content.decode()
    assert "alice-cnn" in body and "held-out accuracy 0.9000" in body
    assert 'id="stat-loss">0.5<' in body and 'id="stat-accuracy">N/A<' in body
    assert f"/ws/runs/{alice_run.pk}/" in body and "js/plotly.min.js" in body
    assert "Cancel" not in body  # a teammate sees it but may not stop it


def test_the_owner_sees_cancel(client, cast, alice_run):
    client.force_login(cast["owner"])
    assert 'class="danger"' in client.get(f"/runs/{alice_run.pk}/").content.decode()


def test_an_outsider_cannot_see_the_run(client, cast, alice_run):
    client.force_login(cast["outsider"])
    assert client.get(f"/runs/{alice_run.pk}/").status_code == 404


def test_the_owner_cancels_a_queued_run_at_once(client, cast, alice_run):
    client.force_login(cast["owner"])
    response = client.post(f"/runs/{alice_run.pk}/cancel/")
    alice_run.refresh_from_db()
    assert response.status_code == 302
    assert alice_run.status == RunStatus.CANCELLED and "before it started" in alice_run.error


def test_a_teammate_may_not_cancel_someone_elses_run(client, cast, alice_run):
    client.force_login(cast["teammate"])
    assert client.post(f"/runs/{alice_run.pk}/cancel/").status_code == 403
    alice_run.refresh_from_db()
    assert alice_run.status == RunStatus.QUEUED and alice_run.cancel_requested_at is None


def test_an_outsider_cannot_even_find_the_run_to_cancel(client, cast, alice_run):
    client.force_login(cast["outsider"])
    assert client.post(f"/runs/{alice_run.pk}/cancel/").status_code == 404


def test_staff_cancel_any_run(client, cast, alice_run):
    client.force_login(cast["admin"])
    client.post(f"/runs/{alice_run.pk}/cancel/")
    alice_run.refresh_from_db()
    assert alice_run.status == RunStatus.CANCELLED and "root" in alice_run.error


def test_cancelling_a_finished_run_says_so(client, cast, alice_run):
    alice_run.finish(RunStatus.CANCELLED)
    client.force_login(cast["owner"])
    response = client.post(f"/runs/{alice_run.pk}/cancel/", follow=True)
    assert "already ended" in response.content.decode()


def test_cancel_needs_a_post(client, cast, alice_run):
    client.force_login(cast["owner"])
    assert client.get(f"/runs/{alice_run.pk}/cancel/").status_code == 405


def test_comparison_overlays_visible_runs_only(client, cast, alice_run):
    other = Run.objects.create(
        owner=cast["owner"], name="bob-ish", workload="digits_cnn", strategy="ddp", hyperparameters={"lr": 0.01}
    )
    secret = Run.objects.create(owner=cast["outsider"], name="eve-secret", workload="digits_cnn", strategy="single")
    client.force_login(cast["owner"])
    body = client.get(f"/runs/compare/?run={alice_run.pk}&run={other.pk}&run={secret.pk}&run=x").content.decode()
    assert "alice-cnn" in body and "bob-ish" in body and "eve-secret" not in body
    assert "<th>lr</th>" in body


def test_comparison_without_runs_explains_itself(client, cast):
    client.force_login(cast["owner"])
    assert "Choose runs to compare" in client.get("/runs/compare/").content.decode()


def test_comparing_environments_lists_only_what_differs(client, cast, alice_run):
    env = {"python": "3.11.7", "torch": "2.13.0+cpu", "packages": {"torch": "2.13.0+cpu", "numpy": "2.1.0"}}
    alice_run.environment = {**env, "lr": 0.003}
    alice_run.save()
    other = Run.objects.create(
        owner=cast["owner"],
        name="alice-cnn-2",
        workload="digits_cnn",
        strategy="single",
        hyperparameters={"epochs": 4, "lr": 0.01},
        environment={**env, "lr": 0.01},
    )
    client.force_login(cast["owner"])

    body = client.get(f"/runs/compare/?run={alice_run.pk}&run={other.pk}").content.decode()
    section = body.split('id="environment-differences"')[1].split("</section>")[0]

    assert "hyperparameter lr" in section and "0.003" in section and "0.01" in section
    assert "epochs" not in section and "package torch" not in section and "python" not in section
    other.environment = {**env, "packages": {"torch": "2.14.0", "numpy": "2.1.0"}}
    other.save()
    section = client.get(f"/runs/compare/?run={alice_run.pk}&run={other.pk}").content.decode()
    assert "package torch" in section and "2.14.0" in section and "package numpy" not in section


def test_comparing_commands_sets_aside_hyperparameters_and_rendezvous(cast, alice_run):
    from training.web.env_diff import command_shape

    alice_run.hyperparameters = {"epochs": 4, "lr": 0.003}
    argv = ["python", "-m", "torch.distributed.run", "--rdzv-id", f"fleet-run-{alice_run.pk}"]
    argv += ["--rdzv-endpoint", "gpu-01:41234", "-m", "training.workloads.digits_cnn", "--epochs", "4", "--lr", "0.003"]

    shape = command_shape(alice_run, argv)

    assert shape == (
        "python -m torch.distributed.run --rdzv-id fleet-run-<id> --rdzv-endpoint gpu-01:<port> "
        "-m training.workloads.digits_cnn <hyperparameters>"
    )
