"""XID errors: the driver's GPU fault events, read from an NVML event set without blocking.

Each sample drains what arrived since the last one and counts it per GPU, so a sample carries
how many XID errors the agent has seen on that GPU (a counter) and the code of the latest one,
as dcgm-exporter's DCGM_FI_DEV_XID_ERRORS does. A GPU that cannot register for XID events
reports both as null.
"""

from __future__ import annotations

import ctypes
from typing import Any

XID_CRITICAL_ERROR = 0x8  # nvmlEventTypeXidCriticalError
# At most this many events are drained per sample, so a storm of events cannot stall the agent.
MAX_EVENTS_PER_SAMPLE = 1000


class XidWatcher:
    """Counts XID events per GPU UUID; `query` is NvmlBackend.query (it turns NVML errors into None)."""

    def __init__(self, query) -> None:
        self._query = query
        self._event_set: Any = None
        self._uuid_of: list[tuple[Any, str]] = []
        self.count: dict[str, int] = {}
        self.last: dict[str, int] = {}

    def watch(self, devices) -> None:
        self._event_set = self._query("nvmlEventSetCreate")
        if self._event_set is None:
            return
        for device in devices:
            registered = self._query(
                "nvmlDeviceRegisterEvents", device.handle, XID_CRITICAL_ERROR, self._event_set, default=False
            )
            if registered is not False:  # pynvml answers None on success
                self._uuid_of.append((_address(device.handle), device.uuid))
                self.count[device.uuid] = 0
                self.last[device.uuid] = 0

    def drain(self) -> None:
        if self._event_set is None:
            return
        for _ in range(MAX_EVENTS_PER_SAMPLE):
            event = self._query("nvmlEventSetWait_v2", self._event_set, 0, default=None)
            if event is None:
                return  # NVML answers TIMEOUT when nothing is waiting
            uuid = self._uuid(event.device)
            if uuid is not None:
                self.count[uuid] += 1
                self.last[uuid] = int(event.eventData)

    def fields(self, uuid: str) -> dict[str, int | None]:
        return {"xid_count": self.count.get(uuid), "xid_last": self.last.get(uuid)}

    def _uuid(self, handle: Any) -> str | None:
        address = _address(handle)
        for known, uuid in self._uuid_of:
            if known == address:
                return uuid
        return None


def _address(handle: Any) -> Any:
    """What identifies a device handle: its pointer's address (an event's handle is a new pointer object)."""
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return id(handle)
