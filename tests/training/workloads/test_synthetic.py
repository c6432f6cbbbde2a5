"""The synthetic throughput workload."""

import sys

from training_runs import assert_follows_protocol, only, run_to_end


def test_the_synthetic_workload_learns_its_generated_task_and_reports_throughput():
    done, found = run_to_end([sys.executable, "-m", "training.workloads.synthetic", "--tiny"])

    assert done.returncode == 0, done.stderr
    assert_follows_protocol(found, strategy="single", world_size=1)
    finished = only(found, "done")
    assert finished["accuracy"] > 0.3  # ten classes: chance is 0.1
    assert finished["samples_per_s"] > 0
