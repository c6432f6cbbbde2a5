"""Simulated GPUs (--simulate N): the NVML backend's interface with made-up readings.

Every reading is a pure function of (seed, GPU index, time), so a given seed
always tells the same story: training with periodic eval dips, idle GPUs, a
forgotten process holding memory at 0 %, and a GPU that throttles on heat.

With ``local_runs``, a GPU that a node worker on this machine gave to a run
reports that run's real processes instead of its made-up ones (localruns.py):
their memory is their resident set and the GPU's utilization their CPU share,
so a run launched in the demo shows on its GPUs and counts as their use.
"""

from __future__ import annotations

import math
import time
import uuid
import zlib
from dataclasses import dataclass

from .localruns import LocalRuns
from .metrics import CLOCKS_EVENT_REASONS, METRIC_KEYS
from .simulate_health import health

SCENARIOS: dict[str, tuple[str, ...]] = {
    # Ordered so that small N still mixes roles; 8 GPUs give 4 training, 2 idle,
    # 1 forgotten and 1 throttling.
    "mixed": (
        "training",
        "forgotten",
        "throttling",
        "idle",
        "training",
        "training",
        "idle",
        "training",
    ),
    "training": ("training",),
    "idle": ("idle",),
    "forgotten": ("forgotten",),
    "throttling": ("throttling",),
}

DRIVER_VERSION = "550.54.15"
CUDA_VERSION = "12.4"
TRAINING_USERS = ("alice", "bob")
FORGOTTEN_USER = "carol"
EVAL_PERIOD_S = 30
EVAL_DIP_S = 3
CONTEXT_OVERHEAD_MIB = 431
GPU_IDLE = CLOCKS_EVENT_REASONS["gpu_idle"]
SW_POWER_CAP = CLOCKS_EVENT_REASONS["sw_power_cap"]
SW_THERMAL = CLOCKS_EVENT_REASONS["sw_thermal_slowdown"]
HW_THERMAL = CLOCKS_EVENT_REASONS["hw_thermal_slowdown"]
UUID_NAMESPACE = uuid.UUID("5b0e7c1a-3d7e-4c7a-9f0e-6a4f2f1c9d10")


@dataclass(frozen=True)
class GpuModel:
    """Published figures of a GPU model that the simulation stays within."""

    name: str
    memory_total_mib: int
    power_limit_w: float
    idle_power_w: float
    pcie_gen: int
    sm_clock_max_mhz: int
    sm_clock_idle_mhz: int
    mem_clock_mhz: int
    mem_clock_idle_mhz: int
    has_fan: bool
    has_ecc: bool


MODELS: tuple[GpuModel, ...] = (
    GpuModel("NVIDIA A100-SXM4-80GB", 81920, 400.0, 56.0, 4, 1410, 210, 1593, 1593, False, True),
    GpuModel("NVIDIA A100-SXM4-40GB", 40960, 400.0, 52.0, 4, 1410, 210, 1215, 1215, False, True),
    GpuModel("NVIDIA H100 80GB HBM3", 81559, 700.0, 72.0, 5, 1980, 345, 2619, 2619, False, True),
    GpuModel("NVIDIA L40S", 46068, 350.0, 35.0, 4, 2520, 210, 9001, 405, False, True),
    GpuModel("NVIDIA GeForce RTX 4090", 24564, 450.0, 20.0, 4, 2520, 210, 10501, 405, True, False),
)
MODEL_NAMES = tuple(m.name for m in MODELS)
# A host name that mentions a model (gpu-h100-01) gets that model unless one is named.
HOSTNAME_HINTS = {"h100": 2, "a100": 0, "l40s": 3, "4090": 4}


def pick_model(hostname: str, seed: int, name: str | None = None) -> GpuModel:
    """The named model, else the one the host name hints at, else one chosen by seed."""
    if name is not None:
        by_name = {m.name: m for m in MODELS}
        if name not in by_name:
            raise ValueError(f"unknown GPU model {name!r}; choose from {', '.join(MODEL_NAMES)}")
        return by_name[name]
    for hint, index in HOSTNAME_HINTS.items():
        if hint in hostname.lower():
            return MODELS[index]
    return MODELS[seed % len(MODELS)]


def gpu_uuid(hostname: str, index: int) -> str:
    """Stable per hostname and index, so a restarted simulated agent is the same GPU."""
    return f"GPU-{uuid.uuid5(UUID_NAMESPACE, f'{hostname}/{index}')}"


class Simulator:
    """N simulated GPUs on one node, with roles picked by scenario."""

    def __init__(
        self,
        count: int,
        hostname: str,
        scenario: str = "mixed",
        seed: int | None = None,
        started_at: float | None = None,
        model: str | None = None,
        local_runs: bool = False,
    ) -> None:
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; choose from {', '.join(SCENARIOS)}")
        self.hostname = hostname
        self.seed = zlib.crc32(hostname.encode()) if seed is None else seed
        self.started_at = time.time() if started_at is None else started_at
        self.model = pick_model(hostname, self.seed, model)
        pattern = SCENARIOS[scenario]
        self.roles = [pattern[i % len(pattern)] for i in range(count)]
        self.uuids = [gpu_uuid(hostname, i) for i in range(count)]
        self.runs = LocalRuns(hostname) if local_runs else None

    def start(self) -> None:
        pass

    def close(self) -> None:
        pass

    def driver_version(self) -> str:
        return DRIVER_VERSION

    def cuda_version(self) -> str:
        return CUDA_VERSION

    def gpus(self) -> list[dict]:
        return [
            {
                "index": i,
                "uuid": self.uuids[i],
                "name": self.model.name,
                "memory_total_mib": self.model.memory_total_mib,
                "power_limit_w": self.model.power_limit_w,
                "pcie_gen": self.model.pcie_gen,
                "pcie_width": 16,
                "pci_bus_id": f"00000000:{0x18 + 0x10 * i:02X}:00.0",
                "mig": False,
            }
            for i in range(len(self.roles))
        ]

    def sample(self, now: float) -> list[dict]:
        runs = self.runs.processes_by_gpu(len(self.roles)) if self.runs else {}
        return [self._reading(i, role, now, runs.get(i)) for i, role in enumerate(self.roles)]

    def _reading(self, index: int, role: str, now: float, run_processes: list[dict] | None = None) -> dict:
        noise = _Noise(self.seed, index, int(now))
        elapsed = max(0.0, now - self.started_at)
        if run_processes:
            reading = self._running(index, elapsed, noise, run_processes)
        else:
            reading = getattr(self, f"_{role}")(index, elapsed, noise)
        processes = reading.pop("processes")
        used = sum(p["mem_used_mib"] for p in processes)
        reading["mem_used_mib"] = used + CONTEXT_OVERHEAD_MIB if processes else 4
        reading["fan_pct"] = self._fan(reading["util_gpu"]) if self.model.has_fan else None
        reading["ecc_volatile"] = 0 if self.model.has_ecc else None
        reading.update(health(self.model, self.seed, index, elapsed, reading))
        # A metric the simulation does not model is N/A, as a driver that lacks it would report.
        return {"gpu": self.uuids[index], **dict.fromkeys(METRIC_KEYS), **reading, "processes": processes}

    def _idle(self, index: int, elapsed: float, noise: _Noise) -> dict:
        m = self.model
        return {
            "util_gpu": 0,
            "util_mem": 0,
            "temp_c": 30 + noise.below("temp", 4),
            "power_w": round(m.idle_power_w + noise.uniform("power", 0, 4), 1),
            "sm_clock_mhz": m.sm_clock_idle_mhz,
            "mem_clock_mhz": m.mem_clock_idle_mhz,
            "pcie_tx_kib_s": noise.below("tx", 40),
            "pcie_rx_kib_s": noise.below("rx", 40),
            "clocks_event_reasons": GPU_IDLE,
            "processes": [],
        }

    def _training(self, index: int, elapsed: float, noise: _Noise) -> dict:
        m = self.model
        phase = (self.seed + index * 7) % EVAL_PERIOD_S
        in_dip = (elapsed + phase) % EVAL_PERIOD_S < EVAL_DIP_S
        util = 3 + noise.below("util", 15) if in_dip else 94 + noise.below("util", 6)
        power = m.idle_power_w + (m.power_limit_w * 0.88 - m.idle_power_w) * util / 100
        capped = not in_dip and noise.uniform("cap", 0, 1) > 0.85
        user = TRAINING_USERS[index % len(TRAINING_USERS)]
        return {
            "util_gpu": util,
            "util_mem": 2 + noise.below("mem", 8) if in_dip else 38 + noise.below("mem", 16),
            "temp_c": 66 + noise.below("temp", 6) - (3 if in_dip else 0),
            "power_w": round(power + noise.uniform("power", 0, m.power_limit_w * 0.03), 1),
            "sm_clock_mhz": m.sm_clock_max_mhz - 15 * noise.below("clock", 4),
            "mem_clock_mhz": m.mem_clock_mhz,
            "pcie_tx_kib_s": 2000 + noise.below("tx", 9000),
            "pcie_rx_kib_s": 800 + noise.below("rx", 4000) if in_dip else 60000 + noise.below("rx", 140000),
            "clocks_event_reasons": SW_POWER_CAP if capped else 0,
            "processes": [self._trainer(index, user, util, 0.72, "train.py --lr 3e-4 --batch-size 256")],
        }

    def _throttling(self, index: int, elapsed: float, noise: _Noise) -> dict:
        m = self.model
        temp = round(61 + 27 * (1 - math.exp(-elapsed / 120)) + noise.uniform("temp", 0, 1.5))
        reasons = (SW_THERMAL if temp >= 85 else 0) | (HW_THERMAL if temp >= 88 else 0)
        # Past the slowdown point the driver sheds about 6 % of the SM clock per degree.
        clock_ratio = 1 - 0.06 * max(0, temp - 84)
        util = 97 + noise.below("util", 3)
        return {
            "util_gpu": util,
            "util_mem": 45 + noise.below("mem", 10),
            "temp_c": temp,
            "power_w": round(m.power_limit_w * 0.86 * clock_ratio + noise.uniform("power", 0, 8), 1),
            "sm_clock_mhz": int(m.sm_clock_max_mhz * clock_ratio) // 15 * 15,
            "mem_clock_mhz": m.mem_clock_mhz,
            "pcie_tx_kib_s": 1500 + noise.below("tx", 6000),
            "pcie_rx_kib_s": 40000 + noise.below("rx", 90000),
            "clocks_event_reasons": reasons,
            "processes": [self._trainer(index, "bob", util, 0.64, "finetune.py --model llama-7b --bf16")],
        }

    def _forgotten(self, index: int, elapsed: float, noise: _Noise) -> dict:
        m = self.model
        return {
            "util_gpu": 0,
            "util_mem": 0,
            "temp_c": 35 + noise.below("temp", 3),
            # A live CUDA context keeps the GPU out of its deepest idle state.
            "power_w": round(m.idle_power_w + 14 + noise.uniform("power", 0, 4), 1),
            "sm_clock_mhz": m.sm_clock_max_mhz,
            "mem_clock_mhz": m.mem_clock_mhz,
            "pcie_tx_kib_s": noise.below("tx", 30),
            "pcie_rx_kib_s": noise.below("rx", 30),
            "clocks_event_reasons": GPU_IDLE,
            "processes": [
                {
                    "pid": self._pid(index),
                    "user": FORGOTTEN_USER,
                    "name": "python",
                    "cmdline": "python -m ipykernel_launcher -f "
                    f"/home/carol/.local/share/jupyter/runtime/kernel-{self.seed % 65536:04x}.json",
                    "mem_used_mib": int(m.memory_total_mib * 0.87),
                    "sm_util": 0,
                    "started_at": round(self.started_at - 3 * 86400 - 3600 * (self.seed % 20), 3),
                }
            ],
        }

    def _running(self, index: int, elapsed: float, noise: _Noise, processes: list[dict]) -> dict:
        """A GPU given to a real run: its load is the run's CPU share, its memory the run's resident set."""
        m = self.model
        util = min(100, sum(p["sm_util"] or 0 for p in processes))
        reading = self._idle(index, elapsed, noise)
        reading.update(
            util_gpu=util,
            util_mem=util // 3,
            temp_c=35 + util * 3 // 10 + noise.below("temp", 3),
            power_w=round(m.idle_power_w + (m.power_limit_w * 0.88 - m.idle_power_w) * util / 100, 1),
            sm_clock_mhz=m.sm_clock_max_mhz if util else m.sm_clock_idle_mhz,
            clocks_event_reasons=0 if util else GPU_IDLE,
            processes=[dict(p) for p in processes],
        )
        return reading

    def _trainer(self, index: int, user: str, util: int, mem_share: float, script: str) -> dict:
        return {
            "pid": self._pid(index),
            "user": user,
            "name": "python",
            "cmdline": f"python {script}",
            "mem_used_mib": int(self.model.memory_total_mib * mem_share),
            "sm_util": util,
            "started_at": round(self.started_at - 1800 - 600 * ((self.seed + index) % 30), 3),
        }

    def _pid(self, index: int) -> int:
        return 4000 + self.seed % 50000 + 97 * index

    def _fan(self, util: int) -> int:
        return 30 + util * 45 // 100


class _Noise:
    """Deterministic noise in [0, 1) for one GPU and one second."""

    def __init__(self, seed: int, index: int, tick: int) -> None:
        self._prefix = f"{seed}:{index}:{tick}:".encode()

    def uniform(self, salt: str, low: float, high: float) -> float:
        fraction = zlib.crc32(self._prefix + salt.encode()) / 2**32
        return low + (high - low) * fraction

    def below(self, salt: str, span: int) -> int:
        """An integer in [0, span)."""
        return int(self.uniform(salt, 0, span))
