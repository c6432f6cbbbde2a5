"""Limits are checked before work: a sweep counts its runs by arithmetic, not by listing them."""

import tracemalloc

import pytest

from training.sweeps.search import SweepRequest, check_sweep, run_count


@pytest.mark.parametrize(
    ("mode", "space", "samples"),
    [
        ("random", {"lr": {"min": 0.0001, "max": 0.1}}, 10_000_000),
        ("random", {"lr": [0.1, 0.2]}, 10**9),
        ("grid", {name: list(range(1, 1001)) for name in ("epochs", "batch_size", "seed")}, None),  # 10^9 runs
    ],
)
def test_a_huge_sweep_is_refused_without_building_it(settings, mode, space, samples):
    request = SweepRequest(user=None, workload="digits_cnn", mode=mode, space=space, samples=samples)
    tracemalloc.start()
    try:
        plans, errors = check_sweep(request)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert plans == [] and "the most a sweep may make is" in errors["space"]
    assert peak < 5 * 1024 * 1024, f"{peak} bytes"


def test_the_count_is_the_product_of_the_grid_or_the_samples():
    assert run_count("grid", {"lr": [1, 2, 3], "seed": [1, 2]}, None) == 6
    assert run_count("random", {"lr": [1]}, 7) == 7
    assert run_count("grid", {"lr": 3}, None) is None
