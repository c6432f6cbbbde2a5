"""The usual samples frame, decoded and checked in one pass of C: every field in range, nothing to refuse.

Nearly every frame an agent sends is plain: each value a number in its metric's range, each GPU announced,
each time recent. For such a text, msgspec decodes straight into typed records whose types and ranges
come from the same specs validation.py checks (the metric list, the per-link and process limits), so no
dict per sample is built and no value is tested in Python. Parsing and checking an 8-GPU frame costs much
less than orjson and validation.check_samples, and each further metric less again
(docs/benchmarks.md#where-a-samples-time-goes).

Anything else (a value out of range, a whole number sent as 5.0, an unknown GPU, a string with a NUL,
nesting or strings over the limits, a frame that is not a samples frame) returns None, and the caller
takes the full path (validation.parse and check_samples), which accepts, refuses and names exactly as
before. So this path never refuses and never explains: it only proves a frame plain, or steps aside.
"""

from typing import Annotated, Any

import msgspec

from monitoring.agent.metrics import NVLINK, NVLINK_MAX_LINKS
from monitoring.ingest.validation import (
    FUTURE_SLACK_S,
    LINK_SPECS,
    MAX_PROCESSES,
    METRIC_SPECS,
    PAST_LIMIT_S,
    PID_MAX,
    PROCESS_NUMBERS,
    RUN_ID_MAX,
    SEQ_MAX,
    TEXT_LIMITS,
    Sample,
    SamplesFrame,
)
from wire.jsontext import MAX_DEPTH, MAX_STRING_CHARS, storable_json, text_problem, within_limits


def ranged(kind: type, low: float, high: float) -> Any:
    return Annotated[kind, msgspec.Meta(ge=low, le=high)]


# A float field takes a JSON integer as a float, as check_metrics does; a whole-number field takes only an
# integer (5.0 steps aside to the full path, which accepts it as 5).
METRIC_FIELDS = [
    (key, ranged(int if whole else float, low, high) | None, None) for key, low, high, whole in METRIC_SPECS
]
WireLink = msgspec.defstruct(
    "WireLink", [(key, ranged(int, low, high) | None, None) for key, low, high in LINK_SPECS], kw_only=True, gc=False
)
WireProcess = msgspec.defstruct(
    "WireProcess",
    [
        ("pid", ranged(int, 0, PID_MAX)),
        *((key, str | None, None) for key in TEXT_LIMITS),
        *((key, ranged(float, low, high) | None, None) for key, low, high in PROCESS_NUMBERS),
        ("run", ranged(int, 1, RUN_ID_MAX) | None, None),
    ],
    kw_only=True,
    gc=False,
)
# The metrics come first, so a sample's values are the head of its fields (msgspec.structs.astuple).
WireSample = msgspec.defstruct(
    "WireSample",
    [
        *METRIC_FIELDS,
        ("gpu", str),
        ("ts", float),
        (NVLINK, Annotated[list[WireLink], msgspec.Meta(max_length=NVLINK_MAX_LINKS)] | None, msgspec.UNSET),
        ("processes", Annotated[list[WireProcess], msgspec.Meta(max_length=MAX_PROCESSES)] | None, None),
    ],
    kw_only=True,
    gc=False,
)
WireFrame = msgspec.defstruct(
    "WireFrame",
    [("type", str), ("seq", ranged(int, 0, SEQ_MAX)), ("samples", list[WireSample])],
    kw_only=True,
    gc=False,
)
DECODER = msgspec.json.Decoder(WireFrame)
METRIC_COUNT = len(METRIC_SPECS)
astuple, asdict = msgspec.structs.astuple, msgspec.structs.asdict


class NotPlain(Exception):
    """The frame needs the full path."""


def plain_samples(text: str | None, known_gpus, now: float, max_bytes: int) -> SamplesFrame | None:
    """The frame's samples, all valid, or None when the full path must decide (see the module docstring)."""
    if text is None or len(text) * 4 > max_bytes:
        return None
    try:
        frame = DECODER.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeEncodeError):
        return None  # a frame with a value to refuse stops here, before the pre-scan the full path runs again
    if frame.type != "samples" or not within_limits(text, MAX_DEPTH, MAX_STRING_CHARS):
        return None
    texts_storable = storable_json(text)
    try:
        samples = [sample_of(wire, known_gpus, now, texts_storable) for wire in frame.samples]
    except NotPlain:
        return None
    return SamplesFrame(frame.seq, samples)


def sample_of(wire, known_gpus, now: float, texts_storable: bool) -> Sample:
    ts = wire.ts
    if wire.gpu not in known_gpus or not now - PAST_LIMIT_S <= ts <= now + FUTURE_SLACK_S:
        raise NotPlain
    processes = wire.processes
    if processes is not None:
        processes = [process_of(process, now, texts_storable) for process in processes]
    return Sample(wire.gpu, ts, astuple(wire)[:METRIC_COUNT], processes, links_of(getattr(wire, NVLINK)))


def links_of(wire) -> list[dict] | None:
    """Per-link figures as validation.check_links gives them: [] for null, None when the sample has none."""
    if wire is msgspec.UNSET:
        return None
    return [] if wire is None else [asdict(link) for link in wire]


def process_of(wire, now: float, texts_storable: bool) -> dict:
    """The process as validation.check_process gives it: texts clipped ("" for null), numbers as floats."""
    process = {"pid": wire.pid}
    for key, limit in TEXT_LIMITS.items():
        value = getattr(wire, key)
        if value is None:
            value = ""
        elif not texts_storable and text_problem(value) is not None:
            raise NotPlain
        process[key] = value[:limit]
    for key, _, _ in PROCESS_NUMBERS:
        process[key] = getattr(wire, key)
    started = wire.started_at
    if started is not None and started > now + FUTURE_SLACK_S:
        raise NotPlain
    if wire.run is not None:
        process["claimed_run"] = wire.run
    return process
