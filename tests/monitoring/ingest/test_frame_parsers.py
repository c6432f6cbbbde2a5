"""Agent frames are parsed with orjson where it accepts them and with json otherwise (jsontext.parse_json): a frame
is checked alike whichever parser read it, down to each refusal's words."""

import json
import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitoring.agent import jsontext
from monitoring.agent.jsontext import parse_json
from monitoring.ingest.validation import METRIC_SPECS, FrameError, check_samples

GPUS = ["GPU-a", "GPU-b"]
NOW = time.time()
NUMBERS = st.one_of(
    st.integers(),
    st.floats(),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70, -(2**63) - 1, 10**400, 1e308, -0.0, 5e-324]),
)
NASTY = st.one_of(NUMBERS, st.none(), st.booleans(), st.text(max_size=3), st.lists(st.integers(), max_size=2))
TEXT = st.text(alphabet=st.sampled_from(["a", "\x00", "\ud800", "é", '"', "\\"]), max_size=4)
PROCESS = st.fixed_dictionaries(
    {"pid": st.one_of(st.integers(0, 2**31 - 1), NASTY)},
    optional={"user": TEXT, "cmdline": TEXT, "run": NASTY, "mem_used_mib": NASTY, "started_at": NASTY},
)
SAMPLE = st.fixed_dictionaries(
    {"gpu": st.sampled_from([*GPUS, "GPU-unknown"]), "ts": st.one_of(st.just(NOW - 1), NUMBERS)},
    optional={
        **{key: st.one_of(st.integers(low, high), NASTY) for key, low, high, _ in METRIC_SPECS},
        "processes": st.lists(PROCESS, max_size=2),
        "nvlink": st.lists(st.fixed_dictionaries({}, optional={"tx_kib_s": NASTY, "rx_kib_s": NASTY}), max_size=2),
    },
)
FRAMES = st.fixed_dictionaries(
    {"type": st.just("samples"), "seq": st.one_of(st.integers(0, 2**63 - 1), NASTY)},
    optional={"samples": st.lists(SAMPLE, max_size=3)},
)


def checked(frame: object) -> tuple:
    """What the ingest makes of a parsed frame: its samples (with each value's type) and its refusals' words."""
    try:
        result = check_samples(frame, set(GPUS), NOW)
    except FrameError as error:
        return ("refused", error.frame())
    refused = result.refused.frame() if result.refused else None
    samples = [(s.uuid, s.ts, [(type(v).__name__, v) for v in s.values], s.processes, s.links) for s in result.samples]
    return ("checked", result.seq, repr(samples), refused)


def test_the_server_parses_with_orjson():
    """Without it the ingest silently takes json's 4x longer parse of every frame (docs/benchmarks.md)."""
    assert jsontext.fast_loads is not None


@settings(max_examples=600, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(FRAMES, st.booleans())
def test_a_frame_is_checked_alike_whichever_parser_read_it(frame, ascii):
    text = json.dumps(frame, ensure_ascii=ascii)
    assert checked(parse_json(text)) == checked(json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        "NaN",
        "-Infinity",
        "1E400",
        "1" + "0" * 400,
        '"\\ud800"',
        '"\ud800"',
        '"a\\u0000b"',
        "-0",
        "-0.0",
        "5e-324",
        str(2**64 - 1),
        "[" * 900 + "]" * 900,
    ],
)
def test_where_orjson_refuses_or_agrees_the_value_is_jsons(text):
    value, expected = parse_json(text), json.loads(text)
    assert type(value) is type(expected)
    assert value == expected or (math.isnan(value) and math.isnan(expected))


def test_a_whole_number_beyond_64_bits_is_the_one_difference():
    assert parse_json(str(2**64)) == float(2**64)
    assert json.loads(str(2**64)) == 2**64
