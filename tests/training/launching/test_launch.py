"""Every launch is checked before anything starts: a clear error per field, no run stored, nothing queued."""

import pytest

from tests.training.conftest import add_node, gpus_of, queued_messages
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run, RunNode

pytestmark = pytest.mark.django_db


def check(user, gpus, **fields):
    hyper = fields.pop("hyperparameters", {})
    request = LaunchRequest(user=user, workload=fields.pop("workload", "digits_cnn"), gpus=list(gpus), **fields)
    request.hyperparameters = {"epochs": 2, **hyper}
    return check_launch(request)


def refused(user, gpus, field, text, watched, **fields):
    plan, errors = check(user, gpus, **fields)
    assert plan is None
    assert text in errors[field], errors
    assert Run.objects.count() == 0 and queued_messages(watched.hostname) == 0


def test_a_good_launch_is_stored_queued_and_sent_to_its_node_queue(
    cast, quiet_node, django_capture_on_commit_callbacks
):
    plan, errors = check(cast["owner"], gpus_of(quiet_node, 2), strategy="ddp")
    assert errors == {}

    with django_capture_on_commit_callbacks(execute=True):
        run = launch(plan)

    assert run.status == RunStatus.QUEUED and run.processes == 2 and run.project == cast["project"]
    assert run.hyperparameters == {"epochs": 2, "batch_size": 32, "lr": 0.002, "optimizer": "adam", "seed": 0}
    part = RunNode.objects.get(run=run)
    assert (part.node, part.rank, part.gpu_indexes) == (quiet_node, 0, [0, 1])
    assert queued_messages(quiet_node.hostname) == 1


def test_a_multi_node_launch_queues_one_task_per_node_in_hostname_order(
    cast, quiet_node, django_capture_on_commit_callbacks
):
    other = add_node(quiet_node.hostname + "-b", gpus=2)
    gpus = gpus_of(other, 1) + gpus_of(quiet_node, 1)

    with django_capture_on_commit_callbacks(execute=True):
        run = launch(check(cast["owner"], gpus, strategy="ddp", processes=1)[0])

    assert list(run.nodes.values_list("node__hostname", "rank")) == [(quiet_node.hostname, 0), (other.hostname, 1)]
    assert queued_messages(quiet_node.hostname) == queued_messages(other.hostname) == 1


@pytest.mark.parametrize("lr", [0, -0.1])
def test_it_refuses_a_learning_rate_that_is_not_positive(cast, quiet_node, lr):
    refused(cast["owner"], gpus_of(quiet_node, 1), "lr", "greater than 0", quiet_node, hyperparameters={"lr": lr})


def test_it_refuses_a_batch_larger_than_the_training_set(cast, quiet_node):
    refused(
        cast["owner"],
        gpus_of(quiet_node, 1),
        "batch_size",
        "larger than the training set",
        quiet_node,
        hyperparameters={"batch_size": 5000},
    )


def test_it_refuses_more_processes_than_gpus(cast, quiet_node):
    refused(
        cast["owner"],
        gpus_of(quiet_node, 2),
        "processes",
        "more than the 2 GPUs",
        quiet_node,
        strategy="ddp",
        processes=3,
    )


def test_it_refuses_more_processes_than_cores_on_a_cpu_only_run(cast, quiet_node):
    refused(
        cast["owner"],
        [],
        "processes",
        "more than the 2 CPU cores",
        quiet_node,
        strategy="ddp",
        processes=3,
        node=quiet_node,
    )


def test_it_refuses_two_gpus_for_a_single_process_run(cast, quiet_node):
    refused(cast["owner"], gpus_of(quiet_node, 2), "gpus", "uses one GPU", quiet_node)


def test_it_refuses_a_multi_node_hogwild_run(cast, quiet_node):
    other = add_node(quiet_node.hostname + "-c", gpus=1)
    gpus = gpus_of(quiet_node, 1) + gpus_of(other, 1)
    refused(cast["owner"], gpus, "nodes", "Only DDP", quiet_node, strategy="hogwild", processes=1)


def test_it_refuses_a_script_outside_the_allowed_directories(cast, quiet_node, tmp_path, settings):
    settings.RUN_SCRIPT_DIRS = [str(tmp_path / "allowed")]
    (tmp_path / "allowed").mkdir()
    (tmp_path / "evil.py").write_text("")
    refused(
        cast["owner"],
        gpus_of(quiet_node, 1),
        "script",
        "outside the allowed",
        quiet_node,
        workload="script",
        script=str(tmp_path / "evil.py"),
    )


def test_it_refuses_an_unknown_workload_and_a_project_the_user_is_not_in(cast, quiet_node):
    refused(cast["outsider"], gpus_of(quiet_node, 1), "workload", "Unknown workload", quiet_node, workload="nope")
    refused(cast["outsider"], gpus_of(quiet_node, 1), "project", "not a member", quiet_node, project=cast["project"])


def test_it_refuses_a_parameter_the_workload_does_not_take(cast, quiet_node):
    refused(
        cast["owner"],
        gpus_of(quiet_node, 1),
        "iterations",
        "takes no parameter",
        quiet_node,
        hyperparameters={"iterations": 3},
    )


def test_it_refuses_a_run_with_neither_gpus_nor_node(cast, quiet_node):
    refused(cast["owner"], [], "gpus", "Choose GPUs", quiet_node)


def test_a_cpu_only_run_hides_every_gpu_from_its_processes(cast, quiet_node):
    run = launch(check(cast["owner"], [], node=quiet_node)[0])
    assert run.gpus.count() == 0 and run.nodes.get().gpu_indexes == []


def test_staff_may_launch_in_any_project(cast, quiet_node):
    plan, errors = check(cast["admin"], gpus_of(quiet_node, 1), project=cast["project"])
    assert errors == {} and plan.project == cast["project"]


def book(user, gpu, hours_from_now: float, hours: float):
    from datetime import timedelta

    from django.utils import timezone

    from reservations.models import Reservation

    start = timezone.now() + timedelta(hours=hours_from_now)
    return Reservation.objects.create(user=user, gpu=gpu, start=start, end=start + timedelta(hours=hours))


def test_it_refuses_gpus_someone_else_has_booked(cast, quiet_node):
    gpu = gpus_of(quiet_node, 1)[0]
    book(cast["teammate"], gpu, hours_from_now=0.5, hours=2)
    refused(cast["owner"], [gpu], "gpus", f"{gpu} is booked by bob from", quiet_node)


def test_a_researcher_may_run_on_gpus_they_booked_themselves(cast, quiet_node):
    gpu = gpus_of(quiet_node, 1)[0]
    book(cast["owner"], gpu, hours_from_now=-0.5, hours=2)
    plan, errors = check(cast["owner"], [gpu])
    assert errors == {} and plan.gpus == [gpu]


def test_a_booking_that_starts_after_the_horizon_does_not_block(cast, quiet_node, settings):
    settings.RUN_BOOKING_HORIZON_S = 3600
    gpu = gpus_of(quiet_node, 1)[0]
    book(cast["teammate"], gpu, hours_from_now=3, hours=1)
    assert check(cast["owner"], [gpu])[1] == {}
