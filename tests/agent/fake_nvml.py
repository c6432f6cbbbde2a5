"""A stand-in for the pynvml module (there is no GPU here): same names, real NVMLError classes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pynvml

MIB = 1024 * 1024


def nvml_error(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)


NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
NOT_FOUND = pynvml.NVML_ERROR_NOT_FOUND
FUNCTION_NOT_FOUND = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
GPU_IS_LOST = pynvml.NVML_ERROR_GPU_IS_LOST


def process(pid: int, mem_mib: int | None) -> SimpleNamespace:
    return SimpleNamespace(pid=pid, usedGpuMemory=None if mem_mib is None else mem_mib * MIB)


def util_sample(pid: int, time_stamp: int, sm_util: int) -> SimpleNamespace:
    return SimpleNamespace(pid=pid, timeStamp=time_stamp, smUtil=sm_util, memUtil=0, encUtil=0, decUtil=0)


class FakeGpu:
    """Answers per NVML function: a value, an NVMLError to raise, or a callable of the extra args."""

    def __init__(self, index: int, **answers: Any) -> None:
        self.index = index
        self.answers = {
            "nvmlDeviceGetUUID": f"GPU-00000000-0000-0000-0000-00000000000{index}",
            "nvmlDeviceGetName": "NVIDIA A100-SXM4-80GB",
            "nvmlDeviceGetMemoryInfo": SimpleNamespace(total=81920 * MIB, used=60211 * MIB, free=21709 * MIB),
            "nvmlDeviceGetEnforcedPowerLimit": 400_000,
            "nvmlDeviceGetCurrPcieLinkGeneration": 4,
            "nvmlDeviceGetCurrPcieLinkWidth": 16,
            "nvmlDeviceGetMigMode": [0, 0],
            "nvmlDeviceGetUtilizationRates": SimpleNamespace(gpu=97, memory=41),
            "nvmlDeviceGetTemperature": lambda sensor: {pynvml.NVML_TEMPERATURE_GPU: 71}[sensor],
            "nvmlDeviceGetPowerUsage": 312_345,
            "nvmlDeviceGetClockInfo": lambda kind: {pynvml.NVML_CLOCK_SM: 1410, pynvml.NVML_CLOCK_MEM: 1593}[kind],
            "nvmlDeviceGetFanSpeed": nvml_error(NOT_SUPPORTED),
            "nvmlDeviceGetPcieThroughput": lambda counter: {
                pynvml.NVML_PCIE_UTIL_TX_BYTES: 1200,
                pynvml.NVML_PCIE_UTIL_RX_BYTES: 88000,
            }[counter],
            "nvmlDeviceGetTotalEccErrors": lambda kind, counter: {
                (pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC): 2,
            }[(kind, counter)],
            "nvmlDeviceGetCurrentClocksEventReasons": 0x40,
            "nvmlDeviceGetCurrentClocksThrottleReasons": 0x40,
            "nvmlDeviceGetComputeRunningProcesses": [],
            "nvmlDeviceGetGraphicsRunningProcesses": [],
            "nvmlDeviceGetProcessUtilization": nvml_error(NOT_FOUND),
        }
        self.answers.update(answers)


class FakeNvml:
    """Module-like object: NvmlBackend(lib=FakeNvml([...])) calls it as it would call pynvml."""

    NVMLError = pynvml.NVMLError

    def __init__(self, gpus: list[FakeGpu], missing: set[str] = frozenset(), init_error: int | None = None) -> None:
        self.gpus = gpus
        self.missing = set(missing)
        self.init_error = init_error
        self.calls: list[str] = []
        self.system = {
            "nvmlSystemGetDriverVersion": "550.54.15",
            "nvmlSystemGetCudaDriverVersion": 12040,
        }

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise nvml_error(self.init_error)

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        return self.gpus[index]

    def __getattr__(self, name: str) -> Any:
        if name in self.missing or not name.startswith("nvml"):
            raise AttributeError(name)
        if name in self.system:
            return lambda: self._answer(name, self.system[name], ())
        return lambda handle, *args: self._answer(name, handle.answers[name], args)

    def _answer(self, name: str, answer: Any, args: tuple) -> Any:
        self.calls.append(name)
        if isinstance(answer, BaseException):
            raise answer
        return answer(*args) if callable(answer) else answer
