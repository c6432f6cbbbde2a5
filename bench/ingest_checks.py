"""What the ingest hardening costs per frame, in process: the checks on and toggled off, alternated.

    SECRET_KEY=dev DATABASE_URL=... python bench/ingest_checks.py [--frames 2000] [--turns 5]

One 8-GPU frame as bench/ingest.py's load generator sends it (the shipped cadence: slow fields in one
frame of 30, and a frame with every field). "on" is the server's path (monitoring/ingest/consumer.py):
the per-node limit, parsing with the depth and length limits (the pre-scan, and the walk where it cannot
decide), and the per-sample checks with the storable-text test. "off" is the same without the hardening:
plain json.loads, no limit, no depth or length check, no text test. "walk" is "on" as it was before the
pre-scans (wire/jsontext.py): every frame walked value by value, every string tested. Reported:
best turn's CPU µs per frame for each (this process's CPU time: waiting for a core on a shared machine is
left out) and the hardening's cost (on − off, walk − off), then the parts timed alone; set it against
the server's CPU per frame from bench/ingest.py in the same session (CPU ms per 1,000 samples × 8 / 1,000).
"""

import argparse
import json
import time
from unittest import mock

from cpu_use import cpu_us_per_call  # bench/ is on the path
from django.conf import settings
from ingest import GPUS, LoadAgent  # sets Django up

from monitoring.ingest import validation
from monitoring.ingest.limits import RateLimit
from wire import jsontext


def frames() -> tuple[dict[str, str], list[str]]:
    agent = LoadAgent("bench-checks", "token", 1, 0)
    now = time.time()
    values = {"seq": 2, "ts": now - 5, "start": now - 600}
    texts = {"shipped cadence": agent.templates[(False, False)], "every field": agent.templates[(True, True)]}
    return {name: text % values for name, text in texts.items()}, agent.uuids


def on(text: str, gpus: set[str], limit: RateLimit) -> None:
    assert limit.over(len(text)) is None
    frame = validation.parse(text, None, settings.AGENT_MAX_FRAME_BYTES)
    texts_storable = jsontext.storable_json(text)
    assert validation.check_samples(frame, gpus, time.time(), texts_storable).refused is None


def turn_us(variant, text: str, gpus: set[str], count: int) -> float:
    limit = RateLimit(1e9, 1e12, 1.0)
    return cpu_us_per_call(lambda: variant(text, gpus, limit), count)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    texts, uuids = frames()
    gpus = set(uuids)
    print(f"{GPUS}-GPU frame, CPU time, best of {args.turns} alternated turns x {args.frames} frames")
    print("frame | on µs | walk µs | off µs | hardening on − off | walk − off")
    for name, text in texts.items():
        results = {"on": [], "walk": [], "off": []}
        for _ in range(args.turns):
            results["on"].append(turn_us(on, text, gpus, args.frames))
            with (
                mock.patch.object(jsontext, "within_limits", lambda text, depth, length: False),
                mock.patch.object(jsontext, "storable_json", lambda text: False),
            ):
                results["walk"].append(turn_us(on, text, gpus, args.frames))
            with mock.patch.object(validation, "storable_text", lambda value, path, problems: value):
                results["off"].append(turn_us(plain, text, gpus, args.frames))
        on_us, walk_us, off_us = (min(results[key]) for key in ("on", "walk", "off"))
        print(
            f"{name} ({len(text):,} chars) | {on_us:.1f} | {walk_us:.1f} | {off_us:.1f} | {on_us - off_us:.1f} | "
            f"{walk_us - off_us:.1f}"
        )
    print("part, timed alone | µs per frame (best turn)")
    for part, call in parts(texts["shipped cadence"]).items():
        print(f"{part} | {cpu_us_per_call(call, args.frames, args.turns):.1f}")


def parts(text: str) -> dict:
    """The hardening's pieces on one shipped-cadence frame, each alone."""
    value = json.loads(text)
    strings = [p[key] for s in value["samples"] for p in s["processes"] for key in validation.TEXT_LIMITS]
    limit = RateLimit(1e9, 1e12, 1.0)
    depth, length = jsontext.MAX_DEPTH, jsontext.MAX_STRING_CHARS
    return {
        "json.loads (not hardening; for scale)": lambda: json.loads(text),
        "walk over the parsed frame (check_shape)": lambda: jsontext.check_shape(value, depth, length),
        "pre-scan of the text (within_limits)": lambda: jsontext.within_limits(text, depth, length),
        f"text test of each of the {len(strings)} process strings": lambda: [jsontext.text_problem(s) for s in strings],
        "text test of the whole text (storable_json)": lambda: jsontext.storable_json(text),
        "per-node limit (RateLimit.over)": lambda: limit.over(len(text)),
    }


def plain(text: str, gpus: set[str], limit: RateLimit) -> None:
    """Without the hardening (storable_text is patched out around the loop)."""
    frame = json.loads(text)
    assert validation.check_samples(frame, gpus, time.time()).refused is None


if __name__ == "__main__":
    main()
