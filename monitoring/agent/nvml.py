"""The NVML backend: the only module that imports pynvml.

Every NVML call goes through NvmlBackend.query, which starts NVML lazily,
looks functions up by name (older drivers and bindings lack some), logs a
missing one once and returns NA instead of raising. A field NVML cannot give
is NA (None, JSON null), never 0.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from . import procinfo
from .metrics import HEALTH_EVERY_S, LINK_METRICS, METRIC_KEYS, NVLINK, NVLINK_MAX_LINKS
from .xid import XidWatcher

T = TypeVar("T")

log = logging.getLogger(__name__)

NA = None

# NVML C ABI values; they never change between driver releases.
TEMPERATURE_GPU = 0
CLOCK_SM = 1
CLOCK_MEM = 2
PCIE_UTIL_TX_BYTES = 0
PCIE_UTIL_RX_BYTES = 1
MEMORY_ERROR_TYPE_UNCORRECTED = 1
VOLATILE_ECC = 0
DEVICE_MIG_ENABLE = 1
ERROR_NOT_SUPPORTED = 3
ERROR_NOT_FOUND = 6
ERROR_TIMEOUT = 10
ERROR_FUNCTION_NOT_FOUND = 13
# Answers that only mean "this GPU or driver does not have it" (or "nothing waiting"), never logged.
QUIET_ERRORS = (ERROR_NOT_SUPPORTED, ERROR_NOT_FOUND, ERROR_TIMEOUT)
MEMORY_V2 = 0x02000028  # nvmlMemory_v2: the memory struct that also tells the reserved part
PAGE_RETIREMENT_MULTIPLE_SBE = 0
PAGE_RETIREMENT_DBE = 1
FI_MEMORY_TEMP = 82
FI_NVLINK_LINK_COUNT = 91
FI_NVLINK_TX_KIB = 138  # cumulative KiB over the links in scope: one link (scopeId = its number) or all
FI_NVLINK_RX_KIB = 139
ALL_LINKS = 0xFFFFFFFF  # a field's scope that sums every NVLink
NVLINK_FIELDS = {"nvlink_tx_kib_s": FI_NVLINK_TX_KIB, "nvlink_rx_kib_s": FI_NVLINK_RX_KIB}
NVLINK_STATE_ACTIVE = 1
VALUE_FIELDS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")  # by nvmlValueType_t

# Per-process utilization samples older than this are not looked at.
PROCESS_UTIL_WINDOW_S = 10.0

_SAME_AS_DEFAULT = object()


class NvmlUnavailable(RuntimeError):
    """NVML cannot be used on this machine (no driver, no library, no bindings)."""


@dataclass
class _Device:
    index: int
    handle: Any
    uuid: str


class NvmlBackend:
    """Reads GPUs and their processes through NVML; same interface as the simulator."""

    def __init__(self, lib: Any = None) -> None:
        self._lib = lib
        self._started = False
        self._missing: set[str] = set()
        self._logged: set[tuple[str, int | None]] = set()
        self._devices: list[_Device] | None = None
        self._process_info: dict[int, dict] = {}
        self._xid = XidWatcher(self.query)
        self._nvlink_seen: dict[str, tuple[float, list]] = {}  # the NVLink counters last read, and when
        self._links_read: dict[str, tuple[float, list[bool]]] = {}  # which links are up, read every HEALTH_EVERY_S
        self._health_read: dict[str, tuple[float, dict]] = {}  # the slow fields are read every HEALTH_EVERY_S

    def start(self) -> None:
        """Start NVML and find the GPUs; raises NvmlUnavailable with a clear reason."""
        self._init()
        if self._devices is None:
            self._devices = self._discover()
            self._xid.watch(self._devices)

    def close(self) -> None:
        if self._started:
            self.query("nvmlShutdown")
            self._started = False
            self._devices = None

    def query(self, name: str, *args: Any, default: Any = NA, not_found: Any = _SAME_AS_DEFAULT) -> Any:
        """Call NVML function name; default on any NVML error, not_found on NOT_FOUND."""
        self._init()
        fn = None if name in self._missing else getattr(self._lib, name, None)
        if fn is None:
            self._log_missing(name)
            return default
        try:
            return fn(*args)
        except self._lib.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code == ERROR_FUNCTION_NOT_FOUND:
                self._log_missing(name)
            elif code == ERROR_NOT_FOUND and not_found is not _SAME_AS_DEFAULT:
                return not_found
            elif code not in QUIET_ERRORS:
                self._log_error_once(name, code, exc)
            return default

    def driver_version(self) -> str | None:
        return _text(self.query("nvmlSystemGetDriverVersion"))

    def cuda_version(self) -> str | None:
        version = self.query("nvmlSystemGetCudaDriverVersion")
        if not isinstance(version, int):
            return None
        return f"{version // 1000}.{version % 1000 // 10}"

    def gpus(self) -> list[dict]:
        """Static description of each GPU, for the hello frame."""
        self.start()
        return [self._gpu_info(d) for d in self._devices]

    def sample(self, now: float) -> list[dict]:
        """One reading per GPU: {"gpu": uuid, <metric keys>..., "processes": [...] or None}."""
        self.start()
        self._xid.drain()
        readings = [self._read_device(d, now) for d in self._devices]
        seen = {p["pid"] for r in readings for p in (r["processes"] or ())}
        self._process_info = {pid: i for pid, i in self._process_info.items() if pid in seen}
        return readings

    def _init(self) -> None:
        if self._started:
            return
        if self._lib is None:
            try:
                import pynvml
            except ImportError as exc:
                raise NvmlUnavailable("the nvidia-ml-py package is not installed") from exc
            self._lib = pynvml
        try:
            self._lib.nvmlInit()
        except self._lib.NVMLError as exc:
            raise NvmlUnavailable(f"NVML could not start: {exc}") from exc
        self._started = True

    def _log_missing(self, name: str) -> None:
        if name not in self._missing:
            self._missing.add(name)
            log.warning("NVML has no %s on this driver; the fields it gives are null", name)

    def _log_error_once(self, name: str, code: int | None, exc: Exception) -> None:
        if (name, code) not in self._logged:
            self._logged.add((name, code))
            log.warning("NVML %s failed: %s; the fields it gives are null", name, exc)

    def _discover(self) -> list[_Device]:
        devices = []
        for index in range(self.query("nvmlDeviceGetCount", default=0)):
            handle = self.query("nvmlDeviceGetHandleByIndex", index)
            uuid = _text(self.query("nvmlDeviceGetUUID", handle)) if handle is not NA else NA
            if uuid is NA:
                log.warning("GPU %d has no readable UUID; it is left out", index)
                continue
            devices.append(_Device(index, handle, uuid))
        return devices

    def _gpu_info(self, device: _Device) -> dict:
        h = device.handle
        memory = self.query("nvmlDeviceGetMemoryInfo", h)
        limit_mw = self.query("nvmlDeviceGetEnforcedPowerLimit", h)
        if limit_mw is NA:
            limit_mw = self.query("nvmlDeviceGetPowerManagementLimit", h)
        mig_mode = self.query("nvmlDeviceGetMigMode", h)
        mig = mig_mode is not NA and mig_mode[0] == DEVICE_MIG_ENABLE
        info = {
            "index": device.index,
            "uuid": device.uuid,
            "name": _text(self.query("nvmlDeviceGetName", h)),
            "memory_total_mib": _mib(getattr(memory, "total", NA)),
            "power_limit_w": _watts(limit_mw),
            "pcie_gen": self.query("nvmlDeviceGetCurrPcieLinkGeneration", h),
            "pcie_width": self.query("nvmlDeviceGetCurrPcieLinkWidth", h),
            "pci_bus_id": _text(getattr(self.query("nvmlDeviceGetPciInfo", h), "busId", NA)),
            "mig": mig,
        }
        if mig:
            info["mig_devices"] = self._mig_devices(h)
        return info

    def _mig_devices(self, handle: Any) -> list[dict]:
        devices = []
        for index in range(self.query("nvmlDeviceGetMaxMigDeviceCount", handle, default=0)):
            # Empty MIG slots answer NOT_FOUND, which query turns into NA quietly.
            mig = self.query("nvmlDeviceGetMigDeviceHandleByIndex", handle, index)
            if mig is NA:
                continue
            memory = self.query("nvmlDeviceGetMemoryInfo", mig)
            devices.append(
                {
                    "index": index,
                    "uuid": _text(self.query("nvmlDeviceGetUUID", mig)),
                    "name": _text(self.query("nvmlDeviceGetName", mig)),
                    "memory_total_mib": _mib(getattr(memory, "total", NA)),
                }
            )
        return devices

    def _read_device(self, device: _Device, now: float) -> dict:
        try:
            reading = {"gpu": device.uuid, **self._metrics(device.handle)}
            health = _every_health_s(self._health_read, device, now, self._health)
            reading.update(health, **self._xid.fields(device.uuid))
            reading.update(self._fields(device, now))
            reading["processes"] = self._processes(device.handle, now)
        except Exception:
            # Not an NVMLError (query handles those): still keep the other GPUs going.
            if (device.uuid, None) not in self._logged:
                self._logged.add((device.uuid, None))
                log.warning("reading GPU %s failed; its fields are null", device.uuid, exc_info=True)
            reading = {"gpu": device.uuid, "processes": None}
        return reading

    def _metrics(self, h: Any) -> dict:
        util = self.query("nvmlDeviceGetUtilizationRates", h)
        memory = self.query("nvmlDeviceGetMemoryInfo", h)
        return {
            **dict.fromkeys(METRIC_KEYS, NA),  # a declared metric not read below is N/A
            "util_gpu": getattr(util, "gpu", NA),
            "util_mem": getattr(util, "memory", NA),
            "mem_used_mib": _mib(getattr(memory, "used", NA)),
            "temp_c": self.query("nvmlDeviceGetTemperature", h, TEMPERATURE_GPU),
            "power_w": _watts(self.query("nvmlDeviceGetPowerUsage", h)),
            "sm_clock_mhz": self.query("nvmlDeviceGetClockInfo", h, CLOCK_SM),
            "mem_clock_mhz": self.query("nvmlDeviceGetClockInfo", h, CLOCK_MEM),
            "fan_pct": self.query("nvmlDeviceGetFanSpeed", h),
            "pcie_tx_kib_s": self.query("nvmlDeviceGetPcieThroughput", h, PCIE_UTIL_TX_BYTES),
            "pcie_rx_kib_s": self.query("nvmlDeviceGetPcieThroughput", h, PCIE_UTIL_RX_BYTES),
            "ecc_volatile": self.query("nvmlDeviceGetTotalEccErrors", h, MEMORY_ERROR_TYPE_UNCORRECTED, VOLATILE_ECC),
            "clocks_event_reasons": self._clocks_event_reasons(h),
            "util_enc": _first(self.query("nvmlDeviceGetEncoderUtilization", h)),
            "util_dec": _first(self.query("nvmlDeviceGetDecoderUtilization", h)),
        }

    def _health(self, h: Any) -> dict:
        """Memory health and the slow counters dcgm-exporter reports by default (metrics.SLOW_KEYS but XID)."""
        corrected, uncorrected, pending, failure = self.query("nvmlDeviceGetRemappedRows", h, default=(NA,) * 4)
        memory = self.query("nvmlDeviceGetMemoryInfo", h, MEMORY_V2)
        retired_pending = self.query("nvmlDeviceGetRetiredPagesPendingStatus", h)
        return {
            "mem_reserved_mib": _mib(getattr(memory, "reserved", NA)),
            "energy_mj": self.query("nvmlDeviceGetTotalEnergyConsumption", h),
            "pcie_replays": self.query("nvmlDeviceGetPcieReplayCounter", h),
            "retired_sbe": _count(self.query("nvmlDeviceGetRetiredPages", h, PAGE_RETIREMENT_MULTIPLE_SBE)),
            "retired_dbe": _count(self.query("nvmlDeviceGetRetiredPages", h, PAGE_RETIREMENT_DBE)),
            "retired_pending": NA if retired_pending is NA else int(bool(retired_pending)),
            "remapped_correctable": corrected,
            "remapped_uncorrectable": uncorrected,
            "remap_pending": NA if pending is NA else int(bool(pending)),
            "remap_failure": NA if failure is NA else int(bool(failure)),
        }

    def _fields(self, device: _Device, now: float) -> dict:
        """Memory temperature and NVLink throughput, over all links and per link: one field-values call answers all."""
        active = _every_health_s(self._links_read, device, now, self._link_states)
        totals = [(NVLINK_FIELDS[m.total], ALL_LINKS) for m in LINK_METRICS]
        per_link = [(NVLINK_FIELDS[m.total], link) for link in range(len(active)) for m in LINK_METRICS]
        temp, *counters = self._field_values(device.handle, [FI_MEMORY_TEMP, *totals, *per_link])
        rates = self._rates(device.uuid, now, counters)
        reading = {"mem_temp_c": temp, **{m.total: rate for m, rate in zip(LINK_METRICS, rates, strict=False)}}
        reading[NVLINK] = _per_link(rates[len(totals) :], active)
        return reading

    def _rates(self, uuid: str, now: float, counters: list) -> list[int | None]:
        """Rates of the driver's cumulative KiB counters since the last reading (null: none yet, or reset)."""
        before = self._nvlink_seen.get(uuid)
        self._nvlink_seen[uuid] = (now, counters)
        if before is None or now <= before[0] or len(before[1]) != len(counters):
            return [NA] * len(counters)
        seconds = now - before[0]
        return [
            NA if value is NA or old is NA or value < old else round((value - old) / seconds)
            for value, old in zip(counters, before[1], strict=True)
        ]

    def _link_states(self, h: Any) -> list[bool]:
        """Whether each NVLink of the GPU is up, by link number; empty on a GPU without NVLink."""
        [count] = self._field_values(h, [FI_NVLINK_LINK_COUNT])
        if not isinstance(count, int) or count <= 0:
            return []
        links = range(min(count, NVLINK_MAX_LINKS))
        return [self.query("nvmlDeviceGetNvLinkState", h, link) == NVLINK_STATE_ACTIVE for link in links]

    def _field_values(self, h: Any, fields: list) -> list:
        values = self.query("nvmlDeviceGetFieldValues", h, fields)
        if values is NA:
            return [NA] * len(fields)
        return [_field_value(v) for v in values]

    def _clocks_event_reasons(self, h: Any) -> int | None:
        reasons = self.query("nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is NA:
            # Drivers before 535 only know the older name.
            reasons = self.query("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        return reasons

    def _processes(self, h: Any, now: float) -> list[dict] | None:
        compute = self.query("nvmlDeviceGetComputeRunningProcesses", h)
        graphics = self.query("nvmlDeviceGetGraphicsRunningProcesses", h)
        if compute is NA and graphics is NA:
            return None
        memory: dict[int, int | None] = {}
        for proc in [*(compute or ()), *(graphics or ())]:
            # A pid using both compute and graphics is listed twice; keep the known memory.
            if memory.get(proc.pid) is None:
                memory[proc.pid] = _mib(getattr(proc, "usedGpuMemory", NA))
        sm_util = self._sm_util(h, now)
        return [self._process(pid, mem, sm_util) for pid, mem in memory.items()]

    def _process(self, pid: int, mem_mib: int | None, sm_util: dict[int, int] | None) -> dict:
        if pid not in self._process_info:
            self._process_info[pid] = procinfo.process_info(pid)
        info = self._process_info[pid]
        return {
            "pid": pid,
            "user": info["user"],
            "name": info["name"],
            "cmdline": info["cmdline"],
            "mem_used_mib": mem_mib,
            # The driver reports only processes that ran kernels in the window.
            "sm_util": NA if sm_util is NA else sm_util.get(pid, 0),
            "started_at": info["started_at"],
            "run": info.get("run"),
        }

    def _sm_util(self, h: Any, now: float) -> dict[int, int] | None:
        since_us = int((now - PROCESS_UTIL_WINDOW_S) * 1_000_000)
        samples = self.query("nvmlDeviceGetProcessUtilization", h, since_us, not_found=[])
        if samples is NA:
            return NA
        latest: dict[int, Any] = {}
        for s in samples:
            if s.pid not in latest or s.timeStamp > latest[s.pid].timeStamp:
                latest[s.pid] = s
        return {pid: s.smUtil for pid, s in latest.items()}


def _every_health_s(last: dict[str, tuple[float, T]], device: _Device, now: float, read: Callable[[Any], T]) -> T:
    """read(device.handle) once in HEALTH_EVERY_S per GPU (again at once if the clock went back); in between,
    the GPU's last reading, which last holds with its time."""
    read_at, value = last.get(device.uuid, (None, None))
    if read_at is None or not 0 <= now - read_at < HEALTH_EVERY_S:
        value = read(device.handle)
        last[device.uuid] = (now, value)
    return value


def _per_link(rates: list, active: list[bool]) -> list[dict] | None:
    """Each link's rates in LINK_METRICS order, null while the link is down; None on a GPU without NVLink."""
    if not active:
        return NA
    width = len(LINK_METRICS)
    return [
        {m.key: rates[link * width + i] if up else NA for i, m in enumerate(LINK_METRICS)}
        for link, up in enumerate(active)
    ]


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def _first(pair: Any) -> Any:
    """The value of NVML's [value, sampling period] answers."""
    return NA if pair is NA else pair[0]


def _count(items: Any) -> int | None:
    return NA if items is NA else len(items)


def _field_value(value: Any) -> int | float | None:
    """A field value's number, or None where the driver answered an error for that field."""
    if getattr(value, "nvmlReturn", 1) != 0 or not 0 <= value.valueType < len(VALUE_FIELDS):
        return NA
    return getattr(value.value, VALUE_FIELDS[value.valueType])


def _mib(value_bytes: int | None) -> int | None:
    return NA if value_bytes is NA else value_bytes // (1024 * 1024)


def _watts(milliwatts: int | None) -> float | None:
    return NA if milliwatts is NA else round(milliwatts / 1000, 1)
