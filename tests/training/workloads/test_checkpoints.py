"""A built-in workload saves checkpoints every N steps and when told to stop, and continues from one."""

import signal
import sys

from training_runs import Running, assert_follows_protocol, only, run_to_end

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
