"""The ingest's per-sample parts timed in process: what a wider sample costs where (no database needed).

    SECRET_KEY=dev DATABASE_URL=postgresql://unused@127.0.0.1:1/x REDIS_URL=redis://127.0.0.1:1/0 \\
        python bench/sample_parts.py [--calls 1000] [--repeats 5]

One 8-GPU frame as bench/ingest.py sends it (a frame without the slow fields, and one with per-link NVLink
figures where the tree has them): parsing and the shape walk, the text test of the whole frame and the
per-sample checks (the full path of monitoring/ingest/consumer.py), the one pass the server takes for such a
plain frame instead (monitoring/ingest/plain_frames.py), the live update dicts and serializing live states
in a tick of 128 GPUs. Best of --repeats, in µs of CPU. Run it in two trees to compare them
(docs/benchmarks.md#where-a-samples-time-goes).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(BASE_DIR), str(BASE_DIR / "bench")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")

import django  # noqa: E402

django.setup()

from cpu_use import cpu_us_per_call  # noqa: E402
from ingest import GPUS, LINKS, READING, SLOW_KEYS  # noqa: E402

from monitoring.agent import metrics  # noqa: E402
from monitoring.ingest.plain_frames import plain_samples  # noqa: E402
from monitoring.ingest.validation import check_samples  # noqa: E402
from monitoring.ingest.writer import GPURef, update_dict  # noqa: E402
from monitoring.live.serializers import GPUStateSerializer  # noqa: E402
from wire.jsontext import loads, storable_json  # noqa: E402


def frame(now: float, links) -> str:
    process = {"pid": 4000, "user": "alice", "name": "python", "cmdline": "python train.py --lr 3e-4",
               "mem_used_mib": 59000, "sm_util": 95, "started_at": now - 100}  # fmt: skip
    reading = {key: value for key, value in READING.items() if key not in SLOW_KEYS}
    extra = {metrics.NVLINK: links} if links else {}
    samples = [{"ts": now - 1, "gpu": f"GPU-{i}", **reading, **extra, "processes": [process]} for i in range(GPUS)]
    return json.dumps({"type": "samples", "seq": 1, "samples": samples}, separators=(",", ":"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    now, known = time.time(), {f"GPU-{i}" for i in range(GPUS)}

    def plain(text: str):
        checked = plain_samples(text, known, now, 2**20)
        assert checked is not None, "the benchmark's frame must be plain"
        return checked

    text = frame(now, None)
    # As the server checks a frame (monitoring/ingest/consumer.py): a text cleared whole needs no test of each string.
    parsed, storable = loads(text), storable_json(text)
    samples = check_samples(parsed, known, now, storable).samples
    pairs = [(GPURef(i, f"GPU-{i}", i, "bench", 81559), sample) for i, sample in enumerate(samples)]
    slow = {key: 0 for key in metrics.SLOW_KEYS}
    states = [update_dict(ref, sample, slow) for ref, sample in pairs] * 16

    def timed(fn, calls=args.calls):
        return cpu_us_per_call(fn, calls, args.repeats)

    print(f"{len(metrics.METRIC_KEYS)} metrics; one {GPUS}-GPU frame of {len(text):,} bytes; µs of CPU, best of "
          f"{args.repeats}")  # fmt: skip
    print(f"parse and shape walk: {timed(lambda: loads(text)):.0f}")
    print(f"text test (storable_json): {timed(lambda: storable_json(text)):.1f}")
    print(f"check_samples: {timed(lambda: check_samples(parsed, known, now, storable)):.0f}")
    print(f"parse and check in one pass (plain_samples, what the server runs): {timed(lambda: plain(text)):.0f}")
    print(f"update_dict x {GPUS}: {timed(lambda: [update_dict(ref, sample, slow) for ref, sample in pairs]):.0f}")
    per_tick = timed(
        lambda: GPUStateSerializer(states, many=True, context={"owners": {}}).data, max(args.calls // 50, 5)
    )
    print(f"one live state, in a tick of {len(states)}: {per_tick / len(states):.1f}")
    if LINKS:
        linked = frame(now, LINKS)
        cost = timed(lambda: check_samples(loads(linked), known, now, storable_json(linked)))
        print(f"parse and check, {len(LINKS)} links per GPU ({len(linked):,} bytes): {cost:.0f}")
        print(f"the same in one pass: {timed(lambda: plain(linked)):.0f}")


if __name__ == "__main__":
    main()
