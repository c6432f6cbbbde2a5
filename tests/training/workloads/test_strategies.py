"""The torch side of each strategy: one module and one registry line, owning its wrap and its checkpoints."""

import pytest
import torch
from torch import nn

from training import strategies as server_side
from training.workloads import checkpoints, strategies


def test_each_strategy_the_workloads_run_under_has_a_torch_side_under_the_same_name():
    runs_workloads = [name for name in server_side.STRATEGIES if server_side.get(name).runs_workloads]
    assert sorted(strategies.STRATEGIES) == sorted(runs_workloads)
    for name in strategies.STRATEGIES:
        assert strategies.get(name).name == name


def test_the_workloads_strategy_flag_offers_the_strategies_torchrun_starts():
    assert strategies.under_torchrun() == ("ddp", "fsdp")


def test_a_whole_state_saved_by_one_strategy_loads_into_another():
    model = nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    state = strategies.get("single").training_state(model, optimizer, None, 7)

    assert set(state) == {"step", "model", "optimizer", "schedule", "rng"}
    assert strategies.get("ddp").restore(state, model, optimizer, None) == 7


@pytest.mark.parametrize(
    "saved, resumed, words",
    [
        ({"strategy": "hogwild"}, "ddp", "saved by a Hogwild run"),
        ({}, "hogwild", "saved by a run of another strategy"),
    ],
)
def test_a_checkpoint_of_its_own_fits_only_its_strategy(saved, resumed, words):
    with pytest.raises(checkpoints.DoesNotFit, match=words):
        checkpoints.check_fits({**saved, "world_size": 2}, 2, strategies.get(resumed))


def test_a_checkpoint_fits_the_strategy_that_saved_it():
    checkpoints.check_fits({"strategy": "hogwild", "world_size": 2}, 2, strategies.get("hogwild"))
    checkpoints.check_fits({"world_size": 2}, 2, strategies.get("fsdp"))
