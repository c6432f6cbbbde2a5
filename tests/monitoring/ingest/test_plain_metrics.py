"""The written-out metric check (plain_metrics) passes exactly what the one-by-one check passes, with its values."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitoring.agent.metrics import METRIC_KEYS
from monitoring.ingest.validation import (
    METRIC_SPECS,
    Problems,
    check_metrics,
    check_metrics_one_by_one,
    compile_plain_metrics,
    plain_metrics,
)

GARBAGE = st.one_of(
    st.booleans(),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**53, 2**63, 2**64, 1e300, -0.0]),
)


def edges(low, high) -> list:
    """At and just past a spec's bounds, as ints and floats: where a range test written out wrong would show."""
    near = [edge for bound in (low, high) for edge in (bound - 1, bound - 0.5, bound, bound + 0.5, bound + 1)]
    return near + [float(edge) for edge in near]


def valid(low, high) -> st.SearchStrategy:
    floats = st.floats(min_value=float(low), max_value=float(high)).filter(lambda value: low <= value <= high)
    return st.one_of(st.integers(min_value=low, max_value=high), floats, st.none())


def any_value(low, high) -> st.SearchStrategy:
    return st.one_of(valid(low, high), st.sampled_from(edges(low, high)), GARBAGE)


CLEAN = st.fixed_dictionaries({}, optional={key: valid(low, high) for key, low, high, _ in METRIC_SPECS})
ONE_EDGE = st.tuples(CLEAN, st.sampled_from(METRIC_SPECS)).flatmap(
    lambda pair: st.sampled_from(edges(*pair[1][1:3])).map(lambda value: {**pair[0], pair[1][0]: value})
)
ANYTHING = st.fixed_dictionaries(
    {}, optional={key: any_value(low, high) for key, low, high, _ in METRIC_SPECS} | {"gpu": st.text(max_size=4)}
)
SAMPLES = st.one_of(ONE_EDGE, ANYTHING)


def same(a: tuple, b: tuple) -> bool:
    return all(type(x) is type(y) and (x == y or (x != x and y != y)) for x, y in zip(a, b, strict=True))


def agrees_with_one_by_one(check):
    @settings(max_examples=1500, deadline=None, database=None, derandomize=True)
    @given(SAMPLES)
    def agrees(raw):
        problems = Problems()
        expected = check_metrics_one_by_one(raw, "s", problems)
        fast = check(raw)
        if problems.items:
            assert fast is None  # a value the one-by-one check refuses is never passed
        else:
            assert fast is not None and same(fast, expected)

    return agrees


def test_the_written_out_check_agrees_with_the_one_by_one_check():
    agrees_with_one_by_one(plain_metrics)()


def test_a_sample_with_one_bad_value_is_refused_by_name_and_the_rest_are_kept():
    raw = {"util_gpu": 97, "temp_c": math.nan, "ecc_volatile": 2.0, "power_w": 512.5}
    problems = Problems()
    values = dict(zip(METRIC_KEYS, check_metrics(raw, "samples[0]", problems), strict=True))
    assert [text for _, text in problems.items] == ["samples[0].temp_c: NaN is not a value (send null when unknown)"]
    assert (values["util_gpu"], values["temp_c"], values["ecc_volatile"], values["power_w"]) == (97.0, None, 2, 512.5)
    assert type(values["ecc_volatile"]) is int


def test_the_comparison_catches_a_check_written_from_a_spec_one_too_wide():
    wide = tuple((k, low, high + 1 if k == "util_gpu" else high, whole) for k, low, high, whole in METRIC_SPECS)
    with pytest.raises(AssertionError):
        agrees_with_one_by_one(compile_plain_metrics(wide))()
