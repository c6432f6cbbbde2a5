"""The strategy registry: every strategy is one module and one line, and nothing else names it."""

import sys
from dataclasses import replace

import pytest

from training import strategies
from training.launching.params import validate_hyperparameters, validate_script_params
from training.strategies import NodeShare, Strategy
from training.workloads import SCRIPT_SPEC, WORKLOADS


class Pipeline(Strategy):
    """A strategy added by a test: a registry line is all it takes to be offered and checked."""

    name = "pipeline"
    label = "Pipeline (test)"
    short = "pipeline"
    spans_nodes = True

    def command(self, share: NodeShare) -> list[str]:
        return [sys.executable, "-m", "pipeline_launcher", str(share.processes), *share.program(), *share.args]


@pytest.fixture
def pipeline(monkeypatch):
    monkeypatch.setitem(strategies.STRATEGIES, "pipeline", f"{__name__}.Pipeline")
    monkeypatch.setattr(strategies, "_loaded", {})
    monkeypatch.setitem(WORKLOADS, "digits_cnn", replace(WORKLOADS["digits_cnn"], strategies=strategies.names()))


def test_each_registered_strategy_answers_to_its_own_name():
    for name in strategies.STRATEGIES:
        assert strategies.get(name).name == name


def test_the_choices_are_the_registry_in_order_with_labels():
    assert strategies.choices() == [
        ("single", "Single process"),
        ("ddp", "DDP (torchrun)"),
        ("hogwild", "Hogwild"),
        ("fsdp", "FSDP (torchrun, sharded)"),
        ("launcher", "Own launcher"),
    ]


def test_an_unknown_strategy_is_refused_by_name():
    clean, errors = validate_hyperparameters({"strategy": "zero3"}, "digits_cnn")
    assert "strategy" not in clean
    assert "Unknown strategy 'zero3'" in errors["strategy"]


def test_a_strategy_added_to_the_registry_is_offered_checked_and_started(pipeline):
    assert ("pipeline", "Pipeline (test)") in strategies.choices()
    clean, errors = validate_hyperparameters({"strategy": "pipeline", "processes": 2, "nodes": 2}, "digits_cnn", gpus=2)
    assert errors == {}
    assert clean["strategy"] == "pipeline" and clean["nodes"] == 2
    _, errors = validate_hyperparameters({"strategy": "single", "processes": 2}, "digits_cnn", gpus=2)
    assert errors["processes"].endswith("choose DDP, Hogwild, FSDP or pipeline for more.")
    argv = strategies.get("pipeline").command(NodeShare(processes=2, module="training.workloads.digits_cnn"))
    assert argv[1:5] == ["-m", "pipeline_launcher", "2", "-m"]


def test_the_way_out_of_a_refusal_names_only_what_the_program_runs_as():
    _, errors = validate_hyperparameters({"strategy": "single", "processes": 2}, "digits_cnn", gpus=2)
    assert errors["processes"].endswith("choose DDP, Hogwild or FSDP for more.")
    _, errors = validate_hyperparameters({"strategy": "single", "processes": 2}, "burnin", gpus=2)
    assert errors["processes"].endswith("choose DDP for more.")


def test_only_strategies_that_span_nodes_take_several():
    _, errors = validate_hyperparameters({"strategy": "hogwild", "nodes": 2}, "digits_cnn")
    assert errors["nodes"] == "Only DDP or FSDP runs span several nodes."
    _, errors = validate_hyperparameters({"strategy": "ddp", "nodes": 2, "processes": 1}, "digits_cnn")
    assert "nodes" not in errors


def test_a_script_runs_only_under_strategies_that_start_a_plain_program():
    assert SCRIPT_SPEC.strategies == ("single", "ddp", "fsdp")
    _, errors = validate_script_params({"strategy": "hogwild"}, cpus=2)
    assert errors["strategy"] == "A script runs as single or ddp or fsdp, not hogwild."


def test_one_gpu_strategies_refuse_two_and_point_at_one_that_takes_them():
    allowed = [strategies.get(name) for name in strategies.STRATEGIES]
    assert (
        strategies.get("single").check_gpus(2, allowed)
        == "A single-process run uses one GPU; choose one, or DDP, FSDP or launcher."
    )
    assert strategies.get("hogwild").check_gpus(1, allowed) is None
    assert strategies.get("ddp").check_gpus(8, allowed) is None


def test_defaults_and_devices_come_from_the_strategy():
    assert strategies.get("ddp").default_processes(4) == 4
    assert strategies.get("ddp").default_processes(0) == 1
    assert strategies.get("single").default_processes(4) == 1
    # Hogwild's workers share one device: the node's cores bound how many, not its GPUs.
    assert strategies.get("hogwild").process_devices(1) == 0
    assert strategies.get("ddp").process_devices(2) == 2
