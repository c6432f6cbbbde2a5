"""What a training process reports: its environment once, then progress, and the result (rank 0 only).

Events go to stdout as ``FLEET_EVENT`` lines (training/workloads/event_lines.py); every step's
metrics also go to the run's CSV when asked (training/workloads/step_csv.py).
"""

from __future__ import annotations

import platform
import socket
import statistics
import time
from collections import deque
from pathlib import Path
from typing import Any

import torch

from training.workloads import event_lines
from training.workloads.git import git_commit
from training.workloads.step_csv import StepCSV
from training.workloads.torch_build import cudnn_text

WARMUP_STEPS = 10


def env_event(strategy: str, world_size: int, device: torch.device, **extra: Any) -> None:
    """The running torch's facts: the CUDA and cuDNN it was built with (None on a CPU build), whatever the device."""
    event_lines.emit(
        "env",
        python=platform.python_version(),
        torch=torch.__version__,
        cuda=torch.version.cuda,
        cudnn=cudnn_text(torch.backends.cudnn.version()),
        host=socket.gethostname(),
        git_commit=git_commit(Path(__file__).resolve().parent),
        strategy=strategy,
        world_size=world_size,
        device=str(device),
        **extra,
    )


class Throughput:
    """Samples per second over training time only (evaluation excluded).

    ``steady`` leaves out the first ``warmup_steps`` steps (allocator, caches,
    the first collective); ``window`` covers the time since it was last read.
    ``median_step`` is the rate of the median steady step: on a node shared
    with other work it shows what the loop does when it has its cores, where
    ``steady`` also counts the steps someone else's process slowed down.
    """

    def __init__(self, warmup_steps: int = WARMUP_STEPS) -> None:
        self.warmup_steps = warmup_steps
        self.steps = 0
        self.samples = 0
        self.seconds = 0.0
        self.steady_samples = 0
        self.steady_seconds = 0.0
        self.window_samples = 0
        self.window_seconds = 0.0
        self.step_rates: deque[float] = deque(maxlen=10_000)

    def add(self, samples: int, seconds: float) -> None:
        self.steps += 1
        self.samples += samples
        self.seconds += seconds
        self.window_samples += samples
        self.window_seconds += seconds
        if self.steps > self.warmup_steps:
            self.steady_samples += samples
            self.steady_seconds += seconds
            if seconds > 0:
                self.step_rates.append(samples / seconds)

    def window(self) -> float | None:
        rate = self.window_samples / self.window_seconds if self.window_seconds > 0 else None
        self.window_samples, self.window_seconds = 0, 0.0
        return rate

    def steady(self) -> float | None:
        if self.steady_seconds > 0:
            return self.steady_samples / self.steady_seconds
        return self.samples / self.seconds if self.seconds > 0 else None

    def median_step(self) -> float | None:
        return statistics.median(self.step_rates) if self.step_rates else None


class Reporter:
    """Turns training steps into events; silent on ranks other than 0."""

    def __init__(self, enabled: bool, world_size: int, interval: float, csv_path: str | None = None) -> None:
        self.enabled = enabled
        self.steps = StepCSV(csv_path) if enabled and csv_path else None
        self.world_size = world_size
        self.throttle = event_lines.ProgressThrottle(interval)
        self.meter = Throughput()
        self.loss_sum = 0.0
        self.loss_count = 0
        self.accuracy: float | None = None
        self.test_loss: float | None = None
        self.stepped = False

    def step(self, step: int, epoch: int, loss: float, samples: int, seconds: float) -> None:
        self.meter.add(samples * self.world_size, seconds)
        self.loss_sum += loss
        self.loss_count += 1
        self.record(step, epoch, loss, samples * self.world_size / seconds if seconds > 0 else None)
        if not self.stepped and self.enabled:  # a resumed run's first step is not step 1
            event_lines.emit("first_step", ts=time.time())
        self.stepped = True
        if self.throttle.ready():
            self.progress(step, epoch)

    def record(self, step: int, epoch: int, loss: float | None, samples_per_s: float | None) -> None:
        """One row of the per-step CSV."""
        if self.steps is not None:
            self.steps.step(step, epoch, loss, samples_per_s)

    def progress(self, step: int, epoch: int) -> None:
        loss = self.loss_sum / self.loss_count if self.loss_count else None
        self.loss_sum, self.loss_count = 0.0, 0
        rate = self.meter.window()
        if self.enabled:
            event_lines.emit(
                "progress",
                step=step,
                epoch=epoch,
                loss=loss,
                accuracy=self.accuracy,
                samples_per_s=rate,
                ts=time.time(),
            )

    def epoch_end(self, step: int, epoch: int, epochs: int, accuracy: float, test_loss: float) -> None:
        self.accuracy, self.test_loss = accuracy, test_loss
        if self.steps is not None:
            self.steps.epoch_end(accuracy, test_loss)
        if self.enabled:
            print(
                f"epoch {epoch}/{epochs}: held-out accuracy {accuracy:.4f}, held-out loss {test_loss:.4f}", flush=True
            )
        if self.throttle.ready(force=epoch == epochs):
            self.progress(step, epoch)

    def done(self, step: int) -> None:
        if self.steps is not None:
            self.steps.close()
        if self.enabled:
            event_lines.emit(
                "done",
                accuracy=self.accuracy,
                loss=self.test_loss,
                samples_per_s=self.meter.steady(),
                median_step_samples_per_s=self.meter.median_step(),
                steps=step,
            )
