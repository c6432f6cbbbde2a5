"""A workload's own flags refuse a hyperparameter as a launch does: the same ranges, in the same words."""

import pytest

from training.launching.params import validate_hyperparameters
from training.workloads import arguments, burnin, digits_cnn


@pytest.mark.parametrize(
    "field, value",
    [("epochs", "1001"), ("epochs", "0"), ("lr", "10.5"), ("batch_size", "0"), ("seed", "-1")],
)
def test_a_training_workload_refuses_what_a_launch_refuses(field, value, capsys):
    refused = validate_hyperparameters({field: value}, "digits_cnn")[1][field]

    with pytest.raises(SystemExit):
        arguments.parse_args(digits_cnn, ["--tiny", f"--{field.replace('_', '-')}", value])

    assert refused in capsys.readouterr().err


@pytest.mark.parametrize("field, value", [("size", "40000"), ("iterations", "0")])
def test_the_burn_in_refuses_what_a_launch_refuses(field, value, capsys):
    refused = validate_hyperparameters({field: value}, "burnin")[1][field]

    with pytest.raises(SystemExit):
        burnin.parse_args([f"--{field}", value])

    assert refused in capsys.readouterr().err


def test_the_launch_defaults_pass_the_workloads_own_checks():
    args = arguments.parse_args(digits_cnn, [])

    assert args.epochs == digits_cnn.DEFAULTS["epochs"] and args.lr == digits_cnn.DEFAULTS["lr"]
