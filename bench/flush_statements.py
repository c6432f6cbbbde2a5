"""The writer's statements timed one by one, in process, against a real PostgreSQL: where a flush's time goes.

    DATABASE_URL=... REDIS_URL=... SECRET_KEY=dev python bench/flush_statements.py [--flushes 300] [--agents 16]

Registers --agents nodes of 8 GPUs, then runs --flushes flushes as the server makes them at 50 frames/s per
agent (one frame of every node a flush, so every GPU once; the slow fields and per-link NVLink figures in one
frame of 30, as an agent sends them): each frame parsed and checked, then monitoring.ingest.writer.write_frames.
Reports the wall time of each statement per sample (the writer waits for PostgreSQL, so this is mostly the
database's work) and how many of monitoring_gpustate's row updates PostgreSQL made in place (heap-only: no row moved, no
index entry written), then deletes what it made. Run it several times on one database to see a table that
stays as the server leaves it between runs.
"""

import argparse
import collections
import contextlib
import os
import sys
import time
import uuid
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(BASE_DIR), str(BASE_DIR / "bench")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402
from ingest import GPUS, LINKS, READING, SLOW_EVERY, SLOW_KEYS, remove_nodes  # noqa: E402

from inventory.models import GPU  # noqa: E402
from inventory.nodes import add_node  # noqa: E402
from monitoring.agent import metrics  # noqa: E402
from monitoring.ingest.models import AgentSession  # noqa: E402
from monitoring.ingest.validation import check_samples  # noqa: E402
from monitoring.ingest.writer import Frame, GPURef, write_frames  # noqa: E402
from wire.jsontext import dumps, loads, storable_json  # noqa: E402

WARM_UP = 30  # flushes left out of the figures


class StatementClock:
    """Wall time per statement (its first words) of every psycopg cursor, COPY included."""

    def __init__(self):
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.on = False

    def add(self, statement: object, started: float) -> None:
        if self.on:
            self.seconds[" ".join(str(statement).split())[:56]] += time.perf_counter() - started

    def install(self) -> None:
        execute, copy, clock = psycopg.Cursor.execute, psycopg.Cursor.copy, self

        def timed_execute(cursor, query, params=None, **options):
            started = time.perf_counter()
            try:
                return execute(cursor, query, params, **options)
            finally:
                clock.add(query, started)

        @contextlib.contextmanager
        def timed_copy(cursor, statement, *args, **options):
            started = time.perf_counter()
            with copy(cursor, statement, *args, **options) as each:
                yield each
            clock.add(statement, started)

        psycopg.Cursor.execute, psycopg.Cursor.copy = timed_execute, timed_copy


def frame_text(refs: list[GPURef], seq: int, base_ts: float) -> str:
    ts = base_ts + seq * 0.02
    full = seq % SLOW_EVERY == 1
    reading = {key: value for key, value in READING.items() if full or key not in SLOW_KEYS}
    samples = []
    for ref in refs:
        process = {"pid": 4000 + ref.index, "user": "alice", "name": "python", "cmdline": "python train.py --lr 3e-4",
                   "mem_used_mib": 59000, "sm_util": 95, "started_at": ts - 600}  # fmt: skip
        links = {metrics.NVLINK: LINKS} if LINKS and full else {}
        samples.append({"ts": ts, "gpu": ref.uuid, **reading, **links, "processes": [process]})
    return dumps({"type": "samples", "seq": seq, "samples": samples})


def in_place_updates() -> tuple[int, int]:
    """monitoring_gpustate's row updates so far, and how many were heap-only (PostgreSQL's own counters)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'monitoring_gpustate'")
        return cursor.fetchone()


def table_bytes() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size('monitoring_gpustate')")
        return cursor.fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--flushes", type=int, default=300)
    parser.add_argument("--agents", type=int, default=16)
    args = parser.parse_args()
    run = uuid.uuid4().hex[:6]
    nodes = [add_node(f"flush-{run}-{i:03d}")[0] for i in range(args.agents)]
    refs = {}
    for node in nodes:
        gpus = [GPU.objects.create(node=node, index=i, uuid=f"GPU-{run}-{node.pk}-{i}") for i in range(GPUS)]
        refs[node.pk] = [GPURef(gpu.pk, gpu.uuid, gpu.index, node.hostname, 81559) for gpu in gpus]
        AgentSession.objects.create(node=node, session="bench", boot_id="bench", connected_at=timezone.now())
    base_ts = time.time() - 1800
    texts = [[frame_text(refs[node.pk], seq, base_ts) for node in nodes] for seq in range(1, args.flushes + 1)]
    clock = StatementClock()
    clock.install()
    try:
        updated_before, in_place_before = in_place_updates()
        bytes_before = table_bytes()
        now = time.time()
        started = 0.0
        for number, seq_texts in enumerate(texts):
            if number == WARM_UP:
                clock.on, started = True, time.perf_counter()
            frames = []
            for node, text in zip(nodes, seq_texts, strict=True):
                by_uuid = {ref.uuid: ref for ref in refs[node.pk]}
                checked = check_samples(loads(text), set(by_uuid), now, storable_json(text))
                pairs = [(by_uuid[sample.uuid], sample) for sample in checked.samples]
                frames.append(Frame(node.pk, "bench", "bench", checked.seq, pairs))
            write_frames(frames, timezone.now())
        elapsed = time.perf_counter() - started
        clock.on = False
        updated_after, in_place_after = in_place_updates()
        updated, in_place = updated_after - updated_before, in_place_after - in_place_before
        grown = table_bytes() - bytes_before
    finally:
        remove_nodes([node.pk for node in nodes])
    samples = (args.flushes - WARM_UP) * args.agents * GPUS
    print(f"{len(metrics.METRIC_KEYS)} metrics; {args.agents} agents x {GPUS} GPUs; {samples:,} samples in "
          f"{args.flushes - WARM_UP} flushes: {elapsed / samples * 1e6:.1f} µs a sample in all")  # fmt: skip
    print(f"monitoring_gpustate: {in_place:,} of {updated:,} row updates in place ({in_place / max(updated, 1):.1%}); "
          f"the table grew {grown / 1024:,.0f} KiB")  # fmt: skip
    for statement, seconds in sorted(clock.seconds.items(), key=lambda item: -item[1]):
        print(f"{seconds / samples * 1e6:8.2f} µs a sample  {statement}")


if __name__ == "__main__":
    main()
