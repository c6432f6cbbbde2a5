"""A built-in workload saves checkpoints every N steps and when told to stop, and continues from one."""

import os
import signal
import sys

import psutil
from training_runs import Running, assert_follows_protocol, only, run_to_end

from training.strategies.ddp import torchrun_argv
from training.strategies.hogwild import hogwild_argv
from training.workloads import checkpoints

DIGITS = [sys.executable, "-m", "training.workloads.digits_cnn", "--tiny"]
STEPS_PER_EPOCH = 45  # 1438 training images in batches of 32


def checkpoint_events(found: list[dict]) -> list[dict]:
    return [event for event in found if event["event"] == "checkpoint"]


def test_a_run_saves_every_n_steps_and_a_resumed_run_continues_from_the_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEET_CHECKPOINT_DIR", str(tmp_path / "first"))
    monkeypatch.setenv("FLEET_CHECKPOINT_EVERY_STEPS", "50")
    done, found = run_to_end([*DIGITS, "--epochs", "2"])
    assert done.returncode == 0, done.stderr
    assert [(e["step"], e["reason"]) for e in checkpoint_events(found)] == [(50, "periodic")]
    assert (tmp_path / "first" / checkpoints.FILE).stat().st_size == checkpoint_events(found)[0]["bytes"]

    monkeypatch.setenv("FLEET_CHECKPOINT_DIR", str(tmp_path / "second"))
    monkeypatch.setenv("FLEET_RESUME_DIR", str(tmp_path / "first"))
    again, resumed = run_to_end([*DIGITS, "--epochs", "2"])

    assert again.returncode == 0, again.stderr
    assert_follows_protocol(resumed, strategy="single", world_size=1)
    steps = [event["step"] for event in resumed if event["event"] == "progress"]
    assert steps[0] > 50, steps  # the step counter carries on from the checkpoint
    assert only(resumed, "done")["steps"] == only(found, "done")["steps"] == 2 * STEPS_PER_EPOCH
    # Weights, optimizer, schedule and RNG all came back: the second half is the first run's second half.
    assert abs(only(resumed, "done")["loss"] - only(found, "done")["loss"]) < 0.02
    assert abs(only(resumed, "done")["accuracy"] - only(found, "done")["accuracy"]) < 0.02


def test_sigterm_saves_a_checkpoint_at_the_current_step_and_exits(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEET_CHECKPOINT_DIR", str(tmp_path))
    monkeypatch.setenv("FLEET_CHECKPOINT_EVERY_STEPS", "0")
    running = Running([*DIGITS, "--epochs", "400"])
    try:
        progress = running.wait_for("progress")
        running.proc.send_signal(signal.SIGTERM)
        saved = running.wait_for("checkpoint")
        code = running.proc.wait(timeout=60)
    finally:
        running.kill()

    assert code == 128 + signal.SIGTERM
    assert saved["reason"] == "stop" and saved["step"] >= progress["step"]
    state = checkpoints.load(tmp_path / checkpoints.FILE)
    assert state["step"] == saved["step"] and set(state) >= {"model", "optimizer", "schedule", "rng"}


def test_a_resume_directory_without_a_checkpoint_is_an_error_before_training(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEET_RESUME_DIR", str(tmp_path))
    done, found = run_to_end([*DIGITS, "--epochs", "1"])

    assert done.returncode != 0
    assert "holds no checkpoint.pt" in done.stderr
    assert not [event for event in found if event["event"] == "progress"]


def test_an_fsdp_checkpoint_continues_only_on_the_world_size_that_saved_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEET_CHECKPOINT_DIR", str(tmp_path / "first"))
    monkeypatch.setenv("FLEET_CHECKPOINT_EVERY_STEPS", "20")
    fsdp = ["--tiny", "--epochs", "1", "--strategy", "fsdp"]
    done, found = run_to_end(torchrun_argv("training.workloads.digits_cnn", 2, script_args=fsdp))
    assert done.returncode == 0, done.stderr
    assert [(e["step"], e["reason"]) for e in checkpoint_events(found)] == [(20, "periodic")]  # 23 steps a rank
    state = checkpoints.load(tmp_path / "first" / checkpoints.FILE)
    assert state["world_size"] == 2 and state["step"] == 20  # gathered whole: every layer's full weights
    assert state["model"]["7.weight"].shape == (64, 1024)  # not a rank's half

    monkeypatch.setenv("FLEET_CHECKPOINT_DIR", str(tmp_path / "second"))
    monkeypatch.setenv("FLEET_RESUME_DIR", str(tmp_path / "first"))
    refused, events = run_to_end(torchrun_argv("training.workloads.digits_cnn", 1, script_args=fsdp))

    assert refused.returncode != 0
    assert "cannot resume: the checkpoint was saved by 2 process(es) and this run has 1" in refused.stderr
    assert not [event for event in events if event["event"] == "progress"]


def test_sigterm_to_a_hogwild_run_saves_the_shared_model_and_a_resumed_run_continues(tmp_path, monkeypatch, start):
    monkeypatch.setenv("FLEET_CHECKPOINT_DIR", str(tmp_path / "first"))
    monkeypatch.setenv("FLEET_CHECKPOINT_EVERY_STEPS", "30")
    running = start(hogwild_argv("digits_cnn", 2, ["--tiny", "--epochs", "400"]))
    periodic = running.wait_for("checkpoint")
    members = running.tree()
    os.killpg(running.proc.pid, signal.SIGTERM)  # as a cancel does: the workers get it too, and wait for the parent
    saved = running.wait_for("checkpoint")
    code = running.proc.wait(timeout=60)

    assert periodic["reason"] == "periodic" and periodic["step"] >= 30
    assert code == 128 + signal.SIGTERM and saved["reason"] == "stop" and saved["step"] >= periodic["step"]
    _, alive = psutil.wait_procs(members, timeout=10)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
    state = checkpoints.load(tmp_path / "first" / checkpoints.FILE)
    assert state["step"] == saved["step"] == sum(worker["step"] for worker in state["workers"])
    assert [set(worker) >= {"optimizer", "schedule", "epoch", "done"} for worker in state["workers"]] == [True] * 2

    monkeypatch.setenv("FLEET_CHECKPOINT_DIR", str(tmp_path / "second"))
    monkeypatch.setenv("FLEET_RESUME_DIR", str(tmp_path / "first"))
    epochs = 4
    again, resumed = run_to_end(hogwild_argv("digits_cnn", 2, ["--tiny", "--epochs", str(epochs)]))

    assert again.returncode == 0, again.stderr
    assert_follows_protocol(resumed, strategy="hogwild", world_size=2)
    steps = [event["step"] for event in resumed if event["event"] == "progress"]
    assert steps[0] > saved["step"], steps
    assert only(resumed, "done")["steps"] == epochs * 2 * 23  # as many as a whole run: 23 steps an epoch a worker
    assert only(resumed, "done")["accuracy"] >= 0.9
    refused, _ = run_to_end(hogwild_argv("digits_cnn", 3, ["--tiny", "--epochs", str(epochs)]))
    assert refused.returncode == 2 and "saved by 2 process(es) and this run has 3" in refused.stderr
