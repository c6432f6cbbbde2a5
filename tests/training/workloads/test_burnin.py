"""The burn-in health check: repeated multiplies, each product checked."""

import sys

import torch
from training_runs import only, run_to_end

from training.workloads import burnin

BURNIN = [sys.executable, "-m", "training.workloads.burnin", "--tiny"]


def test_a_clean_burn_in_passes_and_reports_gflops():
    done, found = run_to_end(BURNIN)

    assert done.returncode == 0, done.stderr
    assert [e["event"] for e in found][:2] == ["env", "first_step"]
    finished = only(found, "done")
    assert finished["ok"] is True and finished["mismatches"] == 0
    assert finished["gflops"] > 0
    assert finished["devices"][0]["worst_error_ratio"] < 1


def test_a_corrupted_product_fails_the_burn_in_with_a_non_zero_exit():
    done, found = run_to_end([*BURNIN, "--inject-fault", "3"])

    assert done.returncode == 1
    finished = only(found, "done")
    assert finished["ok"] is False and finished["mismatches"] == 1
    assert "FAILED" in done.stderr


def test_a_corrupted_first_product_is_caught_by_the_float64_reference():
    checker = burnin.Checker(64, seed=0, device=torch.device("cpu"))
    product = checker.multiply()
    burnin.flip_bit(product, seed=0)

    assert checker.mismatches(product) == 1
    assert checker.mismatches(checker.multiply()) > 0  # every later product now disagrees with the bad first one


def test_products_within_float32_rounding_are_not_mismatches():
    checker = burnin.Checker(300, seed=1, device=torch.device("cpu"))  # large enough to check sampled rows
    assert checker.mismatches(checker.multiply()) == 0
    nudged = checker.multiply()
    nudged[0, 0] = torch.nextafter(nudged[0, 0], torch.tensor(float("inf")))  # one ulp off

    assert checker.mismatches(nudged) == 0
    assert checker.worst < 1
