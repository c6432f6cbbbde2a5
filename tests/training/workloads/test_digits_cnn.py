"""The digits CNN workload run as a single process, by hand."""

import importlib
import sys

import numpy as np
from training_runs import assert_follows_protocol, only, run_to_end

from training.workloads import DIGITS_TRAIN_SIZE, WORKLOADS, arguments, digits_cnn, synthetic


def test_a_single_process_reaches_95_percent_held_out_accuracy_in_the_tiny_configuration():
    done, found = run_to_end([sys.executable, "-m", "training.workloads.digits_cnn", "--tiny"])

    assert done.returncode == 0, done.stderr
    assert_follows_protocol(found, strategy="single", world_size=1)
    assert only(found, "done")["accuracy"] >= 0.95
    epochs = {event["epoch"] for event in found if event["event"] == "progress" and event["accuracy"] is not None}
    assert max(epochs) == digits_cnn.TINY["epochs"]


def test_it_reads_the_same_digits_scikit_learn_loads():
    from sklearn.datasets import load_digits

    images, labels = digits_cnn.load_digits()
    reference = load_digits()

    np.testing.assert_allclose(images.reshape(len(images), -1), reference.data / 16.0, rtol=1e-6)
    np.testing.assert_array_equal(labels, reference.target)


def test_the_held_out_split_is_fixed_by_its_seed_and_stratified():
    _, labels = digits_cnn.load_digits()
    train, held_out = digits_cnn.split(labels, seed=0)

    assert len(train) == DIGITS_TRAIN_SIZE
    assert not set(train) & set(held_out) and len(train) + len(held_out) == len(labels)
    np.testing.assert_array_equal(train, digits_cnn.split(labels, seed=0)[0])
    assert not np.array_equal(train, digits_cnn.split(labels, seed=1)[0])
    share = np.bincount(labels[held_out]) / np.bincount(labels)
    assert np.all(np.abs(share - 0.2) < 0.01)


def test_the_registry_knows_every_workload_module_and_its_training_set_size():
    for name, workload in WORKLOADS.items():
        assert importlib.import_module(workload.module).NAME == name
    train, _ = synthetic.load_data(arguments.parse_args(synthetic, []))
    assert WORKLOADS["synthetic"].train_size == len(train)
    assert WORKLOADS["digits_cnn"].train_size == len(digits_cnn.load_data(arguments.parse_args(digits_cnn, []))[0])
