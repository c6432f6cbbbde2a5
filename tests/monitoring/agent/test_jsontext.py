"""JSON text with limits: the pre-scans of the raw text never pass what the walk over the parsed value refuses."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitoring.agent.frames import encode, samples_frame
from monitoring.agent.simulate import Simulator
from wire.jsontext import (
    MAX_DEPTH,
    MAX_STRING_CHARS,
    JsonTextError,
    check_shape,
    dumps,
    loads,
    storable_json,
    text_problem,
    within_limits,
)

# Strings made of what could fool a scan of the text: brackets, quotes and backslashes (escaped in JSON),
# NUL and a lone surrogate (escaped, or raw with ensure_ascii=False), non-ASCII, and the text of an escape.
PIECES = ["[", "]", "{", "}", '"', "\\", "a", "\x00", "\ud800", "\udfff", "é", "u0000", "ud800"]
TRICKY = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TRICKY,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(TRICKY, kids, max_size=4),
    max_leaves=40,
)
TEXTS = st.builds(
    lambda value, ascii, indent: json.dumps(value, ensure_ascii=ascii, indent=indent),
    VALUES,
    st.booleans(),
    st.sampled_from([None, 1]),
)
EXAMPLES = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


def refusal(check) -> str | None:
    try:
        check()
    except JsonTextError as error:
        return error.code
    return None


@EXAMPLES
@given(TEXTS, st.integers(1, 8), st.integers(0, 12))
def test_the_pre_scan_passes_a_text_only_when_the_walk_passes_it(text, max_depth, max_string):
    value = json.loads(text)
    if within_limits(text, max_depth, max_string):
        check_shape(value, max_depth, max_string)  # raises if the pre-scan let a too-deep or too-long text through
    assert refusal(lambda: loads(text, max_depth, max_string)) == refusal(
        lambda: check_shape(value, max_depth, max_string)
    )


def strings_in(value) -> list[str]:
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            found.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


@EXAMPLES
@given(TEXTS)
def test_a_text_cleared_whole_holds_no_string_postgresql_refuses(text):
    if storable_json(text):
        assert [s for s in strings_in(json.loads(text)) if text_problem(s) is not None] == []


def nested_behind_fake_brackets(depth: int, before: tuple = ("]",), after: tuple = ("[",)) -> str:
    """A list nested depth deep whose strings carry brackets that close each level as soon as it opens."""
    value: object = 0
    for _ in range(depth):
        value = [*before, value, *after]
    return json.dumps(value)


def alternating(depth: int) -> str:
    """Lists and objects in turn, depth deep: each pass of the pre-scan takes off exactly one level."""
    value: object = {}
    for level in range(depth - 1):
        value = [value] if level % 2 == 0 else {"k": value}
    return json.dumps(value)


@pytest.mark.parametrize(
    "text",
    [
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        alternating(MAX_DEPTH + 1),
        nested_behind_fake_brackets(MAX_DEPTH + 1),
        nested_behind_fake_brackets(MAX_DEPTH + 1, before=("", '"]"'), after=('"["',)),
        nested_behind_fake_brackets(MAX_DEPTH + 1, before=('\\"]\\',), after=('\\\\"[{',)),
        json.dumps([{"k": "x" * (MAX_STRING_CHARS + 1)}]),
        json.dumps({"x" * (MAX_STRING_CHARS + 1): 1}),
    ],
    ids=[
        "plain",
        "alternating",
        "behind fake brackets",
        "behind escaped quotes",
        "behind backslashes",
        "long string",
        "long key",
    ],
)
def test_a_text_over_a_limit_is_never_passed_by_the_pre_scan_and_is_refused(text):
    assert not within_limits(text, MAX_DEPTH, MAX_STRING_CHARS)
    with pytest.raises(JsonTextError):
        loads(text)


def test_nesting_up_to_the_limit_is_taken():
    assert within_limits(alternating(MAX_DEPTH), MAX_DEPTH, MAX_STRING_CHARS)
    assert loads(alternating(MAX_DEPTH)) is not None
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert loads(nested_behind_fake_brackets(MAX_DEPTH))


@pytest.mark.parametrize(
    ("text", "storable"),
    [
        ('{"cmdline": "a\\u0000b"}', False),
        ('{"cmdline": "\\ud800"}', False),
        ('{"cmdline": "\\uDC80"}', False),
        ('{"cmdline": "\ud800"}', False),
        ('{"cmdline": "C:\\\\temp\\\\\\"x\\""}', True),
        ('{"cmdline": "plain --gpus [0,1] {x}"}', True),
    ],
)
def test_the_whole_text_test_is_false_for_every_nul_and_lone_surrogate(text, storable):
    assert storable_json(text) is storable
    assert all(text_problem(s) is None for s in strings_in(json.loads(text))) is storable


def test_an_agents_frame_takes_the_fast_path():
    """The shipped frames need neither the walk nor a test of each string (that is what makes the limits cheap)."""
    text = encode(samples_frame(Simulator(8, "gpu-01", scenario="mixed"), 1))
    assert within_limits(text, MAX_DEPTH, MAX_STRING_CHARS)
    assert storable_json(text)


FINITE_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**64, -(2**63) - 1, 10**30])
    | st.floats(allow_nan=False, allow_infinity=False)
    | TRICKY
    | st.text(max_size=4),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(TRICKY, kids, max_size=4),
    max_leaves=40,
)


@EXAMPLES
@given(FINITE_VALUES)
def test_the_servers_json_text_parses_to_what_jsons_text_parses_to(value):
    """orjson writes it where it can; a whole number past 64 bits or a lone surrogate goes through json."""
    assert json.loads(dumps(value)) == json.loads(json.dumps(value))
    if all(text_problem(s) is None for s in strings_in(value)):
        assert json.loads(dumps(value)) == value


def test_what_no_check_passes_is_written_as_null_not_as_invalid_json():
    assert json.loads(dumps({"temp_c": math.nan, "power_w": math.inf})) == {"temp_c": None, "power_w": None}
