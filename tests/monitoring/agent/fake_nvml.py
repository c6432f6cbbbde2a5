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
TIMEOUT = pynvml.NVML_ERROR_TIMEOUT


def field_value(value: int, value_type: int = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG) -> SimpleNamespace:
    """An nvmlFieldValue_t with a number of the given type."""
    name = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")[value_type]
    return SimpleNamespace(nvmlReturn=0, valueType=value_type, value=SimpleNamespace(**{name: value}))


def field_error(code: int = NOT_SUPPORTED) -> SimpleNamespace:
    return SimpleNamespace(nvmlReturn=code, valueType=0, value=SimpleNamespace(dVal=0.0))


def field_values(answers: dict[int, SimpleNamespace]):
    """nvmlDeviceGetFieldValues answering from a field id -> value map (ids not in it: NOT_SUPPORTED)."""

    def answer(fields):
        ids = [f[0] if isinstance(f, tuple) else f for f in fields]
        return [answers.get(i, field_error()) for i in ids]

    return answer


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
            "nvmlDeviceGetMemoryInfo": SimpleNamespace(
                total=81920 * MIB, used=60211 * MIB, free=21180 * MIB, reserved=529 * MIB
            ),
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
            "nvmlDeviceGetPciInfo": SimpleNamespace(busId=f"00000000:{0x07 + index:02X}:00.0".encode()),
            "nvmlDeviceGetFieldValues": field_values({pynvml.NVML_FI_DEV_MEMORY_TEMP: field_value(79)}),
            "nvmlDeviceGetEncoderUtilization": [0, 167000],
            "nvmlDeviceGetDecoderUtilization": [3, 167000],
            "nvmlDeviceGetTotalEnergyConsumption": 9_876_543_210,
            "nvmlDeviceGetPcieReplayCounter": 0,
            # An Ampere GPU: rows are remapped, pages are not retired.
            "nvmlDeviceGetRetiredPages": nvml_error(NOT_SUPPORTED),
            "nvmlDeviceGetRetiredPagesPendingStatus": nvml_error(NOT_SUPPORTED),
            "nvmlDeviceGetRemappedRows": (0, 0, 0, 0),
            "nvmlDeviceRegisterEvents": None,
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
        self.xid_events: list[tuple[FakeGpu, int]] = []  # (gpu, XID code), delivered in order

    def nvmlEventSetCreate(self) -> str:
        if "nvmlEventSetCreate" in self.missing:
            raise nvml_error(FUNCTION_NOT_FOUND)
        return "event-set"

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> SimpleNamespace:
        if not self.xid_events:
            raise nvml_error(TIMEOUT)
        gpu, code = self.xid_events.pop(0)
        return SimpleNamespace(device=gpu, eventType=0x8, eventData=code)

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
