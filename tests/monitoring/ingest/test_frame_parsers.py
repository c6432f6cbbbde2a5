"""Agent frames are parsed with orjson where it accepts them and with json otherwise (jsontext.parse_json): a frame
is checked alike whichever parser read it, down to each refusal's words."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitoring.ingest.validation import FrameError, check_samples
from tests.monitoring.ingest.frame_strategies import FRAMES, GPUS, NOW
from wire import jsontext
from wire.jsontext import parse_json


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
