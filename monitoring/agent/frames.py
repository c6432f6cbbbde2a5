"""Protocol version 1 frames built from a backend (NVML or simulated)."""

from __future__ import annotations

import json
import logging
import time
from typing import Protocol

from wire.jsontext import storable

from . import AGENT_VERSION, PROTOCOL
from .metrics import BY_KEY, LINK_METRICS, METRIC_KEYS, NVLINK, NVLINK_MAX_LINKS, in_bounds

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 1024 * 1024
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"

_reported_out_of_bounds: set[str] = set()


class Backend(Protocol):
    """What frames need from a source of GPU readings."""

    def start(self) -> None: ...
    def close(self) -> None: ...
    def driver_version(self) -> str | None: ...
    def cuda_version(self) -> str | None: ...
    def gpus(self) -> list[dict]: ...
    def sample(self, now: float) -> list[dict]: ...


def hello_frame(backend: Backend, hostname: str, session: str) -> dict:
    """The first frame on every connection: who this node is and what GPUs it has."""
    return {
        "type": "hello",
        "protocol": PROTOCOL,
        "hostname": hostname,
        "agent_version": AGENT_VERSION,
        "driver_version": backend.driver_version(),
        "cuda_version": backend.cuda_version(),
        "boot_id": boot_id(),
        "session": session,
        "gpus": backend.gpus(),
    }


def samples_frame(backend: Backend, seq: int, now: float | None = None) -> dict:
    """One reading of every GPU on the node, all with the same ts (UNIX seconds, UTC)."""
    ts = round(time.time() if now is None else now, 3)
    return {
        "type": "samples",
        "seq": seq,
        "samples": [_sample(ts, reading) for reading in backend.sample(ts)],
    }


def encode(frame: dict) -> str:
    """Compact JSON; a samples frame over the size limit loses its process lists."""
    text = _dumps(frame)
    if len(text) * 4 <= MAX_FRAME_BYTES or len(text.encode()) <= MAX_FRAME_BYTES:
        return text
    if frame.get("type") != "samples":
        return text
    log.warning("samples frame %s is over 1 MiB; sending it without process lists", frame["seq"])
    samples = [{**s, "processes": None} for s in frame["samples"]]
    return _dumps({**frame, "samples": samples})


def boot_id() -> str | None:
    try:
        with open(BOOT_ID_PATH, encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _dumps(frame: dict) -> str:
    return json.dumps(_storable_texts(frame), separators=(",", ":"), allow_nan=False)


def _storable_texts(value: object) -> object:
    """value with every NUL and lone surrogate in its strings replaced by U+FFFD, which the server refuses.

    A command line with bytes that are not UTF-8 reads as lone surrogates; a real node must never trip that.
    """
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(key): _storable_texts(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_storable_texts(item) for item in value]
    return value


def _sample(ts: float, reading: dict) -> dict:
    sample = {"ts": ts, "gpu": reading["gpu"]}
    for key in METRIC_KEYS:
        sample[key] = _checked(key, reading.get(key))
    sample[NVLINK] = _links(reading.get(NVLINK))
    sample["processes"] = reading.get("processes")
    return sample


def _links(links: list[dict] | None) -> list[dict] | None:
    """Per-link NVLink values, each checked against its total's range; null without NVLink."""
    if not links:
        return None
    return [{m.key: _checked(m.total, link.get(m.key)) for m in LINK_METRICS} for link in links[:NVLINK_MAX_LINKS]]


def _checked(key: str, value: object) -> int | float | None:
    """The value, or None when it is missing or implausible (the server would refuse it)."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and in_bounds(key, value):
        return BY_KEY[key].type(value)
    if key not in _reported_out_of_bounds:
        _reported_out_of_bounds.add(key)
        log.warning("%s reading %r is outside its plausible range; sent as null", key, value)
    return None
