"""The one-pass path for plain samples frames (monitoring/ingest/plain_frames.py): the agent's frames take it,
and whatever it takes, the full path (validation.parse and check_samples) takes alike, value for value and type
for type, refusing nothing; for anything else it steps aside and the full path answers as before."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitoring.agent.frames import encode, samples_frame
from monitoring.agent.metrics import METRIC_KEYS, NVLINK
from monitoring.agent.simulate import SCENARIOS, Simulator
from monitoring.ingest.plain_frames import plain_samples
from monitoring.ingest.validation import FrameError, check_samples, parse
from tests.monitoring.ingest.frame_strategies import FRAMES, GOOD_FRAMES, GPUS, NOW
from wire.jsontext import storable_json

MAX_BYTES = 1024 * 1024


def full_path(text: str, gpus, now: float) -> tuple:
    """What the ingest made of a text before the one-pass path: its samples, each value's type, its refusals."""
    try:
        frame = parse(text, None, MAX_BYTES)
        if frame.get("type") != "samples":
            return ("not samples",)
        result = check_samples(frame, gpus, now, storable_json(text))
    except FrameError as error:
        return ("refused", error.frame())
    return described(result, result.refused.frame() if result.refused else None)


def described(result, refused) -> tuple:
    samples = [(s.uuid, s.ts, [(type(v).__name__, v) for v in s.values], s.processes, s.links) for s in result.samples]
    return ("checked", result.seq, repr(samples), refused)


def assert_taken_alike(text: str, gpus=GPUS, now: float = NOW) -> bool:
    """True when the one-pass path took the text, having checked that the full path takes it alike."""
    plain = plain_samples(text, gpus, now, MAX_BYTES)
    if plain is None:
        return False
    assert plain.refused is None
    assert described(plain, None) == full_path(text, gpus, now)
    return True


@settings(max_examples=1500, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.one_of(GOOD_FRAMES, FRAMES), st.booleans())
def test_whatever_the_one_pass_path_takes_the_full_path_takes_alike(frame, ascii):
    assert_taken_alike(json.dumps(frame, ensure_ascii=ascii))


def test_the_equivalence_test_meets_plain_frames_often():
    """Guard for the property above: were the generated frames never plain, it would prove nothing."""
    taken = []

    @settings(max_examples=400, deadline=None, database=None, derandomize=True)
    @given(GOOD_FRAMES)
    def count(frame):
        taken.append(assert_taken_alike(json.dumps(frame)))

    count()
    assert sum(taken) >= 30


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_frame_the_agent_sends_takes_the_one_pass_path(scenario):
    simulator = Simulator(8, "gpu-plain", scenario=scenario, started_at=NOW - 7200, model="NVIDIA H100 80GB HBM3")
    uuids = [gpu["uuid"] for gpu in simulator.gpus()]
    for seq, moment in enumerate(range(0, 600, 7)):
        text = encode(samples_frame(simulator, seq, NOW - 600 + moment))
        assert assert_taken_alike(text, uuids), text[:300]


def test_health_fields_and_per_link_figures_take_the_one_pass_path():
    reading = {key: 1 for key in METRIC_KEYS}
    links = [{"tx_kib_s": 1_000_000, "rx_kib_s": None}, {"rx_kib_s": 7, "spare": [1]}]
    text = json.dumps({"type": "samples", "seq": 3, "samples": [
        {"gpu": "GPU-a", "ts": NOW, **reading, NVLINK: links, "processes": []},
        {"gpu": "GPU-b", "ts": NOW, NVLINK: None, "processes": None},
    ]})  # fmt: skip
    assert assert_taken_alike(text)
    first, second = plain_samples(text, GPUS, NOW, MAX_BYTES).samples
    assert first.links == [{"tx_kib_s": 1_000_000, "rx_kib_s": None}, {"tx_kib_s": None, "rx_kib_s": 7}]
    assert (second.links, second.processes) == ([], None)


def frame(*samples: str, head: str = '"type": "samples", "seq": 1') -> str:
    return "{" + head + ', "samples": [' + ", ".join(samples) + "]}"


def sample(fields: str = '"util_gpu": 50', gpu: str = "GPU-a", ts: float = NOW, processes: str = "") -> str:
    return f'{{"gpu": "{gpu}", "ts": {ts}, {fields}, "processes": [{processes}]}}'


def process(user: str = "a", started: float = NOW) -> str:
    return f'{{"pid": 7, "user": "{user}", "started_at": {started}}}'


@pytest.mark.parametrize(
    "text",
    [
        frame(sample('"util_gpu": 500')),
        frame(sample('"ecc_volatile": 2.0')),
        frame(sample(gpu="GPU-z")),
        frame(sample(ts=NOW - 7200)),
        frame(sample(processes=process(user="a\\u0000b"))),
        frame(sample(processes=process(user="\\ud800"))),
        frame(sample(processes=process(started=NOW + 3600))),
        frame(sample('"util_gpu": 500, "util_gpu": 5')),
        frame(head='"type": "samples", "seq": 1, "deep": ' + "[" * 5000 + "]" * 5000),
        frame(head='"type": "samples", "seq": 1, "long": "' + "x" * 70000 + '"'),
        frame(head='"type": "samples", "seq": 1.0'),
        '{"type": "samples", "seq": 1}',
        frame(sample('"util_gpu": NaN')),
        frame(head='"type": "hello", "seq": 1'),
        "[1, 2]",
    ],
    ids=["out of range", "whole number as 5.0", "unknown GPU", "too old", "NUL", "lone surrogate", "started later",
         "a bad value then a good one", "too deep", "string too long", "seq 1.0", "no samples", "NaN", "hello",
         "not an object"],
)  # fmt: skip
def test_anything_else_steps_aside_for_the_full_path(text):
    assert plain_samples(text, GPUS, NOW, MAX_BYTES) is None
    full_path(text, GPUS, NOW)  # and the full path answers it without an error of its own


def test_a_plain_frame_written_by_these_helpers_is_taken():
    """Guard for the cases above: each differs from this plain frame in the one way its name says."""
    assert assert_taken_alike(frame(sample(processes=process())))
