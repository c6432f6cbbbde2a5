"""Hypothesis strategies for samples frames full of what a hostile or broken agent may send."""

import time

from hypothesis import strategies as st

from monitoring.ingest.validation import LINK_SPECS, METRIC_SPECS

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


def in_range(low: float, high: float, whole: bool = False) -> st.SearchStrategy:
    """A value an agent sends for a field of this range: an int, a float (not for a whole field), or null."""
    ints = st.one_of(st.integers(min_value=int(low), max_value=int(high)), st.sampled_from([low, high]), st.none())
    if whole:
        return ints
    floats = st.floats(min_value=float(low), max_value=float(high)).filter(lambda value: low <= value <= high)
    return st.one_of(ints, floats, st.sampled_from([float(low), float(high)]))


GOOD_TEXT = st.one_of(st.none(), st.text(max_size=6), st.text(alphabet='ab\x00\ud800é\\"', max_size=5))
GOOD_PROCESS = st.fixed_dictionaries(
    {"pid": st.integers(0, 2**31 - 1)},
    optional={
        "user": GOOD_TEXT,
        "name": GOOD_TEXT,
        "cmdline": st.one_of(GOOD_TEXT, st.just("x" * 5000)),
        "mem_used_mib": in_range(0, 4 * 1024 * 1024),
        "sm_util": in_range(0, 100),
        "started_at": st.one_of(in_range(0, NOW), in_range(0, NOW), st.just(NOW + 3600)),
        "run": st.one_of(st.none(), st.integers(1, 2**63 - 1), st.just(0)),
    },
)
GOOD_LINK = st.fixed_dictionaries({}, optional={key: in_range(low, high, whole=True) for key, low, high in LINK_SPECS})
GOOD_SAMPLE = st.fixed_dictionaries(
    {"gpu": st.sampled_from(GPUS), "ts": st.sampled_from([NOW - 1, NOW - 1, NOW - 3599, NOW + 299, NOW + 301])},
    optional={
        **{key: in_range(low, high, whole) for key, low, high, whole in METRIC_SPECS},
        "processes": st.one_of(st.none(), st.lists(GOOD_PROCESS, max_size=2)),
        "nvlink": st.one_of(st.none(), st.lists(GOOD_LINK, max_size=3)),
        "unknown": st.one_of(st.integers(), st.text(max_size=3), st.lists(st.lists(st.integers(), max_size=2))),
    },
)


def past_an_edge(low: float, high: float) -> st.SearchStrategy:
    return st.sampled_from([low - 1, low - 0.5, high + 0.5, high + 1])


# A sample with one metric just past its range: where a range written one too wide would show.
EDGY_SAMPLE = st.tuples(GOOD_SAMPLE, st.sampled_from(METRIC_SPECS)).flatmap(
    lambda pair: past_an_edge(*pair[1][1:3]).map(lambda value: {**pair[0], pair[1][0]: value})
)
# Frames an agent sends, most of them plain, some with a value at or past an edge: the one-pass path
# (monitoring/ingest/plain_frames.py) must take the plain ones and may step aside for the rest.
GOOD_FRAMES = st.fixed_dictionaries(
    {"type": st.sampled_from(["samples", "samples", "samples", "hello"]), "seq": st.integers(0, 2**63 - 1)},
    optional={"samples": st.lists(st.one_of(GOOD_SAMPLE, GOOD_SAMPLE, EDGY_SAMPLE, SAMPLE), max_size=3)},
)
