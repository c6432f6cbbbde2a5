"""Validation of run parameters for the run form (training/launching/params.py)."""

import pytest

from training.launching.params import validate_hyperparameters
from training.workloads import DIGITS_TRAIN_SIZE, WORKLOADS


def errors_for(params, workload="digits_cnn", **devices):
    return validate_hyperparameters(params, workload, **devices)[1]


def test_it_accepts_a_good_form_and_fills_in_the_workloads_defaults():
    clean, errors = validate_hyperparameters(
        {"lr": "0.01", "batch_size": "64", "optimizer": "SGD", "strategy": "ddp", "processes": 2}, "digits_cnn", cpus=2
    )

    assert errors == {}
    assert clean == {
        "epochs": WORKLOADS["digits_cnn"].defaults["epochs"],
        "batch_size": 64,
        "lr": 0.01,
        "optimizer": "sgd",
        "seed": 0,
        "strategy": "ddp",
        "processes": 2,
        "nodes": 1,
    }


@pytest.mark.parametrize("lr", [0, -0.1, 10.5, "fast", float("nan"), float("inf")])
def test_it_refuses_a_learning_rate_that_is_not_positive_or_is_absurd(lr):
    assert "lr" in errors_for({"lr": lr})


@pytest.mark.parametrize("batch_size", [0, -4, 2.5, DIGITS_TRAIN_SIZE + 1, "big"])
def test_it_refuses_a_batch_size_below_one_or_beyond_the_training_set(batch_size):
    assert "batch_size" in errors_for({"batch_size": batch_size})


def test_it_accepts_a_batch_of_the_whole_training_set():
    assert errors_for({"batch_size": DIGITS_TRAIN_SIZE}) == {}


def test_the_batch_size_message_names_the_training_set_size():
    assert str(DIGITS_TRAIN_SIZE) in errors_for({"batch_size": 5000})["batch_size"]


@pytest.mark.parametrize("epochs", [0, 1001, -1, True])
def test_it_refuses_epochs_outside_one_to_a_thousand(epochs):
    assert "epochs" in errors_for({"epochs": epochs})


def test_it_refuses_an_unknown_optimizer():
    assert "optimizer" in errors_for({"optimizer": "lbfgs"})


def test_it_refuses_a_negative_seed():
    assert "seed" in errors_for({"seed": -1})


def test_it_refuses_more_processes_than_the_nodes_gpus():
    errors = errors_for({"strategy": "ddp", "processes": 5}, gpus=4)
    assert "4 GPUs" in errors["processes"]
    assert errors_for({"strategy": "ddp", "processes": 4}, gpus=4) == {}


def test_without_gpus_it_refuses_more_processes_than_cpu_cores():
    errors = errors_for({"strategy": "hogwild", "processes": 3}, cpus=2)
    assert "2 CPU cores" in errors["processes"]


def test_it_refuses_zero_processes():
    assert "processes" in errors_for({"strategy": "ddp", "processes": 0}, cpus=2)


def test_a_single_process_run_has_one_process():
    assert "processes" in errors_for({"strategy": "single", "processes": 2}, cpus=2)


def test_only_ddp_spans_several_nodes():
    assert "nodes" in errors_for({"strategy": "hogwild", "processes": 2, "nodes": 2}, cpus=2)
    assert errors_for({"strategy": "ddp", "processes": 2, "nodes": 2}, cpus=2) == {}


def test_burn_in_takes_its_own_parameters_and_no_learning_rate():
    clean, errors = validate_hyperparameters({"size": 1024, "iterations": 10, "lr": 0.1}, "burnin")

    assert set(errors) == {"lr"}
    assert clean["size"] == 1024 and clean["iterations"] == 10


def test_burn_in_does_not_run_as_hogwild():
    assert "strategy" in errors_for({"strategy": "hogwild", "processes": 1}, workload="burnin")


def test_it_refuses_an_unknown_workload_by_name():
    clean, errors = validate_hyperparameters({}, "resnet")
    assert clean == {} and "resnet" in errors["workload"]


def test_every_error_is_a_sentence_keyed_by_its_field():
    _, errors = validate_hyperparameters(
        {"lr": 0, "batch_size": 0, "epochs": 0, "optimizer": "x", "seed": -1, "strategy": "ddp", "processes": 0},
        "digits_cnn",
        cpus=2,
    )
    assert set(errors) == {"lr", "batch_size", "epochs", "optimizer", "seed", "processes"}
    assert all(message.endswith(".") for message in errors.values())
