"""Check agent frames field by field, naming every problem by its path.

A hello is accepted or refused whole. In a samples frame each sample stands alone: the valid ones are
stored and acked, and one error frame names each refused sample and why.

Only what passes is handed on, normalised: floats for metric columns, ints for counters, clipped strings.
Unknown keys are ignored, so newer agents keep working.
"""

import math
import re
import sys
from dataclasses import dataclass

from django.db import models

from monitoring.agent.metrics import BY_KEY, LINK_METRICS, METRICS, NVLINK, NVLINK_MAX_LINKS
from monitoring.storage.models import GPUSample
from wire.jsontext import JsonTextError, loads, text_problem

MAX_ERRORS_REPORTED = 10
MAX_REFUSED_LISTED = 256
MAX_GPUS = 256
MAX_PROCESSES = 256
FUTURE_SLACK_S = 300.0
# The agent buffers an hour of frames at its default interval; older ones cannot be honest replays.
PAST_LIMIT_S = 3600.0
PID_MAX = 2**31 - 1
RUN_ID_MAX = 2**63 - 1
SEQ_MAX = 2**63 - 1  # PostgreSQL's bigint
INDEX_MAX = 32767
TEXT_LIMITS = {"user": 64, "name": 255, "cmdline": 4096}
PROTOCOL = 1
VERSION_LENGTH = 64
INTEGER_COLUMNS = {f.name for f in GPUSample._meta.concrete_fields if isinstance(f, models.BigIntegerField)}


class FrameError(Exception):
    """A frame we refuse: a protocol error code and a detail naming each bad field (and a close code, if any)."""

    close_code: int | None = None

    def __init__(self, code: str, detail: str, seq: int | None = None, refused: list[dict] | None = None):
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.seq = seq
        self.refused = refused

    def frame(self) -> dict:
        error = {"type": "error", "code": self.code, "detail": self.detail}
        if self.seq is not None:
            error["seq"] = self.seq
        if self.refused is not None:
            error["refused"] = self.refused
        return error


@dataclass(frozen=True)
class Sample:
    """One GPU's reading: its UUID, UNIX ts, metric values in METRICS order, its processes, and its NVLink
    throughput per link ({LINK_METRICS key: value} per link; [] without NVLink; None when not in the sample)."""

    uuid: str
    ts: float
    values: tuple
    processes: list[dict] | None
    links: list[dict] | None = None


@dataclass(frozen=True)
class SamplesFrame:
    """The valid samples of a frame, and the error naming those refused (None when every one passed)."""

    seq: int
    samples: list[Sample]
    refused: FrameError | None = None


@dataclass(frozen=True)
class GPUInfo:
    """A GPU as the hello announces it."""

    index: int
    uuid: str
    name: str
    memory_total_mib: int | None
    power_limit_w: float | None
    pcie_gen: int | None
    pcie_width: int | None
    mig: bool
    pci_bus_id: str = ""


@dataclass(frozen=True)
class Hello:
    hostname: str
    agent_version: str
    driver_version: str
    cuda_version: str
    boot_id: str
    session: str
    gpus: list[GPUInfo]


class Problems:
    """Collects (code, path, message) and raises one FrameError naming them all."""

    def __init__(self):
        self.items: list[tuple[str, str]] = []

    def add(self, code: str, path: str, message: str) -> None:
        self.items.append((code, f"{path}: {message}"))

    def raise_if_any(self, seq: int | None = None) -> None:
        if self.items:
            raise self.error(seq)

    def error(self, seq: int | None = None, refused: list[dict] | None = None) -> FrameError:
        shown = [text for _, text in self.items[:MAX_ERRORS_REPORTED]]
        more = len(self.items) - len(shown)
        detail = "; ".join(shown) + (f"; and {more} more" if more else "")
        return FrameError(self.items[0][0], detail, seq, refused)


def parse(text: str | None, binary: bytes | None, max_bytes: int) -> dict:
    """The frame as a dict, or FrameError(too_large / binary / not_json / too_deep / too_long)."""
    if binary is not None:
        raise FrameError("binary", f"binary frames are not part of the protocol ({len(binary)} bytes); send JSON text")
    size = len(text) if len(text) * 4 <= max_bytes else len(text.encode())
    if size > max_bytes:
        raise FrameError("too_large", f"frame is {size} bytes; the limit is {max_bytes}")
    try:
        frame = loads(text)
    except JsonTextError as exc:
        raise FrameError(exc.code, f"frame is {exc.detail}" if exc.code == "not_json" else exc.detail) from None
    if not isinstance(frame, dict):
        raise FrameError("not_json", f"a frame must be a JSON object, not {type(frame).__name__}")
    return frame


def number_problem(value: object, low: float | None = None, high: float | None = None) -> str | None:
    """Why value is not an acceptable number, or None when it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "not a number"
    if value != value:
        return "NaN is not a value (send null when unknown)"
    if isinstance(value, float) and math.isinf(value):
        return "infinite"
    if low == 0 and value < 0:
        return "negative"
    if low is not None and value < low:
        return f"below {low:g}"
    if high is not None and value > high:
        return f"above {high:g}"
    if not -sys.float_info.max <= value <= sys.float_info.max:  # a whole number too large for any check's arithmetic
        return "beyond the range of a double"
    return None


def check_samples(frame: dict, known_gpus: set[str], now: float, texts_storable: bool = False) -> SamplesFrame:
    """The frame's valid samples; FrameError only when its seq cannot be read.

    texts_storable: the frame's JSON text was cleared whole (jsontext.storable_json), so its strings need
    no test one by one for a NUL or a lone surrogate.
    """
    seq = frame.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= SEQ_MAX:
        raise FrameError("bad_payload", f"seq: a whole number from 0 to {SEQ_MAX} is required")
    raw_samples = frame.get("samples")
    if not isinstance(raw_samples, list):
        return SamplesFrame(seq, [], FrameError("bad_payload", "samples: a list is required", seq))
    problems = Problems()
    samples, refused = [], []
    for i, raw in enumerate(raw_samples):
        before = len(problems.items)
        sample = check_sample(raw, f"samples[{i}]", known_gpus, now, problems, texts_storable)
        if sample is not None:
            samples.append(sample)
        elif len(refused) < MAX_REFUSED_LISTED:
            reasons = [text for _, text in problems.items[before : before + MAX_ERRORS_REPORTED]]
            refused.append({"sample": i, "gpu": gpu_named(raw), "problems": reasons})
    return SamplesFrame(seq, samples, problems.error(seq, refused) if problems.items else None)


def gpu_named(raw: object) -> str | None:
    gpu = raw.get("gpu") if isinstance(raw, dict) else None
    return gpu[:96] if isinstance(gpu, str) else None


def check_sample(
    raw: object, path: str, known_gpus: set[str], now: float, problems: Problems, texts_storable: bool
) -> Sample | None:
    if not isinstance(raw, dict):
        problems.add("bad_payload", path, "an object is required")
        return None
    before = len(problems.items)
    uuid = raw.get("gpu")
    if not isinstance(uuid, str):
        problems.add("bad_payload", f"{path}.gpu", "a GPU UUID is required")
    elif uuid not in known_gpus:
        problems.add("unknown_gpu", f"{path}.gpu", f"{uuid[:96]!r} was not announced in hello")
    ts = raw.get("ts")
    if (why := number_problem(ts)) is not None:
        problems.add("bad_payload", f"{path}.ts", why)
    elif ts > now + FUTURE_SLACK_S:
        problems.add("bad_ts", f"{path}.ts", f"{ts - now:.0f} s in the future; check the node's clock")
    elif ts < now - PAST_LIMIT_S:
        problems.add("bad_ts", f"{path}.ts", f"{now - ts:.0f} s old; the agent buffer holds {PAST_LIMIT_S:.0f} s")
    values = check_metrics(raw, path, problems)
    links = check_links(raw[NVLINK], f"{path}.{NVLINK}", problems) if NVLINK in raw else None
    processes = check_processes(raw.get("processes"), f"{path}.processes", now, problems, texts_storable)
    if len(problems.items) > before:
        return None
    return Sample(uuid, float(ts), values, processes, links)


# (key, lowest, highest, whole numbers only), in METRICS order.
METRIC_SPECS = tuple((m.key, m.min, m.max, m.key in INTEGER_COLUMNS) for m in METRICS)


def plain_metrics_source(specs: tuple) -> str:
    """Source of plain_metrics(raw): the values of check_metrics when every one passes, else None.

    This runs for every sample of every GPU. Written out metric by metric (as dataclasses and namedtuple write
    their methods), a sample costs less than the loop over METRIC_SPECS below, which then runs only for a sample
    with a value to refuse and names why (docs/benchmarks.md#where-a-samples-time-goes).
    """
    lines = ["def plain_metrics(raw):", "    get = raw.get"]
    for number, (key, low, high, whole) in enumerate(specs):
        value = f"v{number}"
        lines += [f"    {value} = get({key!r})", f"    if {value} is not None:", f"        kind = type({value})"]
        if whole:
            lines += [
                "        if kind is int:",
                f"            if not {low!r} <= {value} <= {high!r}: return None",
                f"        elif kind is float and {value}.is_integer() and {low!r} <= {value} <= {high!r}:",
                f"            {value} = int({value})",
                "        else: return None",
            ]
        else:
            lines += [
                f"        if (kind is float or kind is int) and {low!r} <= {value} <= {high!r}:",
                f"            if kind is int: {value} = float({value})",
                "        else: return None",
            ]
    lines.append(f"    return ({', '.join(f'v{number}' for number in range(len(specs)))},)")
    return "\n".join(lines)


def compile_plain_metrics(specs: tuple):
    namespace: dict = {}
    exec(plain_metrics_source(specs), namespace)  # noqa: S102 (the source is ours, made from METRIC_SPECS)
    return namespace["plain_metrics"]


plain_metrics = compile_plain_metrics(METRIC_SPECS)


def check_metrics(raw: dict, path: str, problems: Problems) -> tuple:
    """The metric values in METRICS order: floats, ints for counters, None for N/A.

    The reasons are worked out only for a sample that plain_metrics does not pass whole.
    """
    values = plain_metrics(raw)
    return values if values is not None else check_metrics_one_by_one(raw, path, problems)


def check_metrics_one_by_one(raw: dict, path: str, problems: Problems) -> tuple:
    """check_metrics for a sample with a value to refuse: every value checked, each refused one named."""
    values = []
    for key, low, high, whole in METRIC_SPECS:
        value = raw.get(key)
        kind = type(value)
        if value is None:
            values.append(None)
        elif (
            (kind is int or kind is float) and low <= value <= high and (kind is int or not whole or value.is_integer())
        ):
            values.append(int(value) if whole else float(value))
        else:
            why = number_problem(value, low, high) or "not a whole number"
            problems.add("bad_payload", f"{path}.{key}", why)
            values.append(None)
    return tuple(values)


# (key, lowest, highest) of each per-link value: its total's range.
LINK_SPECS = tuple((m.key, BY_KEY[m.total].min, BY_KEY[m.total].max) for m in LINK_METRICS)


def check_links(raw: object, path: str, problems: Problems) -> list[dict] | None:
    """Per-link NVLink values; [] for null (a GPU without NVLink)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > NVLINK_MAX_LINKS:
        problems.add("bad_payload", path, f"a list of at most {NVLINK_MAX_LINKS} links or null is required")
        return None
    links = []
    for number, link in enumerate(raw):
        if not isinstance(link, dict):
            problems.add("bad_payload", f"{path}[{number}]", "an object is required")
            continue
        values = {}
        for key, low, high in LINK_SPECS:
            value = link.get(key)
            kind = type(value)
            if value is None or ((kind is int or (kind is float and value.is_integer())) and low <= value <= high):
                values[key] = None if value is None else int(value)
            else:
                problems.add("bad_payload", f"{path}[{number}].{key}", number_problem(value, low, high) or "not whole")
        links.append(values)
    return links


def check_processes(raw: object, path: str, now: float, problems: Problems, texts_storable: bool) -> list[dict] | None:
    """None when the agent could not list processes (not the same as an empty list)."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        problems.add("bad_payload", path, "a list or null is required")
        return None
    if len(raw) > MAX_PROCESSES:
        problems.add("bad_payload", path, f"more than {MAX_PROCESSES} processes")
        return None
    checked = [check_process(p, path, i, now, problems, texts_storable) for i, p in enumerate(raw)]
    return [p for p in checked if p is not None]


PROCESS_NUMBERS = (("mem_used_mib", 0, 4 * 1024 * 1024), ("sm_util", 0, 100), ("started_at", 0, 1e12))


def check_process(
    raw: object, path: str, index: int, now: float, problems: Problems, texts_storable: bool
) -> dict | None:
    if not isinstance(raw, dict):
        problems.add("bad_payload", f"{path}[{index}]", "an object is required")
        return None
    before = len(problems.items)
    pid = raw.get("pid")
    if type(pid) is not int or not 0 <= pid <= PID_MAX:
        problems.add("bad_payload", f"{path}[{index}].pid", "a process id (whole number) is required")
    process = {"pid": pid}
    for key, limit in TEXT_LIMITS.items():
        value = raw.get(key)
        if value is None:
            value = ""
        elif type(value) is not str:
            problems.add("bad_payload", f"{path}[{index}].{key}", "text or null is required")
            continue
        value = value[:limit]
        process[key] = value if texts_storable else storable_text(value, f"{path}[{index}].{key}", problems)
    for key, low, high in PROCESS_NUMBERS:
        value = raw.get(key)
        kind = type(value)
        if value is None or ((kind is float or kind is int) and low <= value <= high):
            process[key] = None if value is None else float(value)
        else:
            problems.add("bad_payload", f"{path}[{index}].{key}", number_problem(value, low, high) or "out of range")
    run = raw.get("run")
    if run is not None:
        # Only a claim here: monitoring.ingest.claims believes it for a run placed on this GPU, or flags it.
        if type(run) is not int or not 1 <= run <= RUN_ID_MAX:
            problems.add("bad_payload", f"{path}[{index}].run", "a run id (whole number of at least 1) or null")
        else:
            process["claimed_run"] = run
    started = process.get("started_at")
    if started is not None and started > now + FUTURE_SLACK_S:
        problems.add("bad_ts", f"{path}[{index}].started_at", "in the future")
    return process if len(problems.items) == before else None


def check_hello(frame: dict) -> Hello:
    if frame.get("protocol") != PROTOCOL:
        spoken = frame.get("protocol")
        raise FrameError("unsupported_protocol", f"protocol {spoken!r} is not supported; this server speaks {PROTOCOL}")
    problems = Problems()
    hostname = frame.get("hostname")
    if not isinstance(hostname, str) or not hostname.strip():
        problems.add("bad_payload", "hostname", "a host name is required")
        hostname = ""
    else:
        hostname = storable_text(hostname, "hostname", problems)
    texts = {key: check_text(frame.get(key), key, problems) for key in TEXT_FIELDS}
    gpus = frame.get("gpus")
    if not isinstance(gpus, list) or len(gpus) > MAX_GPUS:
        problems.add("bad_payload", "gpus", f"a list of at most {MAX_GPUS} GPUs is required")
        gpus = []
    infos = [info for i, raw in enumerate(gpus) if (info := check_gpu(raw, f"gpus[{i}]", problems))]
    for key in ("uuid", "index"):
        seen = [getattr(info, key) for info in infos]
        if len(set(seen)) != len(seen):
            problems.add("bad_payload", "gpus", f"two GPUs share one {key}")
    problems.raise_if_any()
    return Hello(hostname=hostname.strip(), gpus=infos, **texts)


PCI_BUS_ID = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]")
GPU_NUMBER_LIMITS = (
    ("memory_total_mib", 4 * 1024 * 1024),
    ("power_limit_w", 5000),
    ("pcie_gen", 16),
    ("pcie_width", 64),
)
TEXT_FIELDS = ("agent_version", "driver_version", "cuda_version", "boot_id", "session")


def check_text(value: object, path: str, problems: Problems) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > VERSION_LENGTH:
        problems.add("bad_payload", path, f"text of at most {VERSION_LENGTH} characters or null is required")
        return ""
    return storable_text(value, path, problems)


def storable_text(value: str, path: str, problems: Problems) -> str:
    """value when PostgreSQL can store it; otherwise a bad_text problem naming the field."""
    if (why := text_problem(value)) is not None:
        problems.add("bad_text", path, why)
        return ""
    return value


def check_gpu(raw: object, path: str, problems: Problems) -> GPUInfo | None:
    if not isinstance(raw, dict):
        problems.add("bad_payload", path, "an object is required")
        return None
    before = len(problems.items)
    index, uuid, name = raw.get("index"), raw.get("uuid"), raw.get("name")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= INDEX_MAX:
        problems.add("bad_payload", f"{path}.index", f"a whole number from 0 to {INDEX_MAX} is required")
    if not isinstance(uuid, str) or not uuid.strip() or len(uuid) > 96:
        problems.add("bad_payload", f"{path}.uuid", "a UUID of at most 96 characters is required")
    else:
        storable_text(uuid, f"{path}.uuid", problems)
    if name is not None and not isinstance(name, str):
        problems.add("bad_payload", f"{path}.name", "text or null is required")
    elif name is not None:
        storable_text(name, f"{path}.name", problems)
    bus_id = raw.get("pci_bus_id")
    if bus_id is not None and not (isinstance(bus_id, str) and PCI_BUS_ID.fullmatch(bus_id)):
        problems.add("bad_payload", f"{path}.pci_bus_id", "a PCI address like 00000000:3B:00.0 or null is required")
    numbers = {}
    for key, high in GPU_NUMBER_LIMITS:
        value = raw.get(key)
        if value is not None and (why := number_problem(value, 0, high)) is not None:
            problems.add("bad_payload", f"{path}.{key}", why)
        numbers[key] = value
    if len(problems.items) > before:
        return None
    return GPUInfo(
        index=index,
        uuid=uuid.strip(),
        name=(name or "")[:100],
        memory_total_mib=None if numbers["memory_total_mib"] is None else int(numbers["memory_total_mib"]),
        power_limit_w=None if numbers["power_limit_w"] is None else float(numbers["power_limit_w"]),
        pcie_gen=None if numbers["pcie_gen"] is None else int(numbers["pcie_gen"]),
        pcie_width=None if numbers["pcie_width"] is None else int(numbers["pcie_width"]),
        mig=raw.get("mig") is True,
        pci_bus_id=bus_id or "",
    )
