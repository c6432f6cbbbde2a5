"""Slow health fields travel only when they change, or every `every_s` seconds (metrics.SLOW_KEYS).

Remapped rows, retired pages, XID counts and the like stay the same for days; sending them every
second would widen every frame, and the server's work on it, with values that did not change
(docs/benchmarks.md#agent). A sample without such a field means "not read at this sample": the server
keeps the GPU's latest value of it.
"""

from __future__ import annotations

from .metrics import BY_KEY, NVLINK, NVLINK_EVERY_S, SLOW_KEYS


class Cadence:
    """Remembers what was last sent of each GPU's slow fields, and when."""

    def __init__(self) -> None:
        self._sent: dict[tuple[str, str], tuple[float, object]] = {}
        self._links_sent: dict[str, tuple[float, bool]] = {}  # per GPU: when per-link figures went, and if any

    def thin(self, frame: dict) -> dict:
        """Drop, in place, the slow fields of a samples frame that are unchanged and not yet due."""
        for sample in frame["samples"]:
            gpu, ts = sample["gpu"], sample["ts"]
            for key in SLOW_KEYS:
                if key not in sample:
                    continue
                value, last = sample[key], self._sent.get((gpu, key))
                if last is not None and last[1] == value and ts - last[0] < BY_KEY[key].every_s:
                    del sample[key]
                else:
                    self._sent[(gpu, key)] = (ts, value)
            self._thin_links(sample)
        return frame

    def _thin_links(self, sample: dict) -> None:
        """NVLink per link goes every NVLINK_EVERY_S, whatever its values, and at once when links appear or go."""
        if NVLINK not in sample:
            return
        gpu, ts, has_links = sample["gpu"], sample["ts"], sample[NVLINK] is not None
        last = self._links_sent.get(gpu)
        if last is not None and last[1] == has_links and 0 <= ts - last[0] < NVLINK_EVERY_S:
            del sample[NVLINK]
        else:
            self._links_sent[gpu] = (ts, has_links)
