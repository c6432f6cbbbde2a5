"""The ingest's write path as it would be written without COPY, kept only as the benchmarks' baselines.

    insert:     every frame of a flush in one transaction, samples and processes by multi-row INSERT over
                unnested arrays, and the latest state updated from arrays (no staging tables)
    per-sample: one transaction per frame, one statement per sample, process and latest state

The product writes with COPY (monitoring/ingest/writer.write_frames); docs/benchmarks.md#write-method compares.
bench/baseline_server.py serves the product with one of these in its place.
"""

import json
from datetime import datetime

from django.db import connection, transaction

from monitoring.agent.metrics import METRIC_KEYS
from monitoring.ingest.claims import check_claims
from monitoring.ingest.writer import (
    MARK_SEEN,
    METRIC_ALIASES,
    METRIC_ARRAYS,
    METRIC_LIST,
    SLOW_RETURNED,
    STATE_TABLE,
    FlushResult,
    Frame,
    MovedGPU,
    advance_sessions,
    bound_cursor,
    columns_of,
    days_of,
    dumps,
    latest_per_gpu,
    latest_state_set,
    mark_online,
    newest_links,
    note_late,
    process_rows,
    sample_rows,
    store_links,
)
from monitoring.storage.partitions import PARTITIONS

INSERT_SAMPLES = f"""
    INSERT INTO monitoring_gpusample (gpu_id, ts, {METRIC_LIST})
    SELECT g, to_timestamp(t), {METRIC_ALIASES}
    FROM unnest(%b::bigint[], %b::float8[], {METRIC_ARRAYS}) AS v(g, t, {METRIC_ALIASES})
    ON CONFLICT (gpu_id, ts) DO NOTHING
"""
INSERT_PROCESSES = """
    INSERT INTO monitoring_processsample
        (gpu_id, ts, pid, os_user, name, cmdline, mem_used_mib, sm_util, started_at, run_id)
    SELECT g, to_timestamp(t), pid, os_user, name, cmdline, mem, sm, to_timestamp(started), run
    FROM unnest(%b::bigint[], %b::float8[], %b::int[], %b::text[], %b::text[], %b::text[],
                %b::float8[], %b::float8[], %b::float8[], %b::bigint[])
         AS v(g, t, pid, os_user, name, cmdline, mem, sm, started, run)
    ON CONFLICT (gpu_id, ts, pid) DO NOTHING
"""
UPDATE_LATEST = f"""
    UPDATE {STATE_TABLE} AS gpu SET {latest_state_set("v.t", "v.processes", lambda key: f"v.m_{key}")}
    FROM unnest(%b::bigint[], %b::float8[], %b::text[], {METRIC_ARRAYS})
        AS v(g, t, processes, {METRIC_ALIASES})
    WHERE gpu.gpu_id = v.g AND (gpu.last_sample_at IS NULL OR gpu.last_sample_at < to_timestamp(v.t))
    RETURNING gpu.gpu_id{SLOW_RETURNED}
"""
INSERT_ONE = f"""
    INSERT INTO monitoring_gpusample (gpu_id, ts, {METRIC_LIST})
    VALUES (%s, to_timestamp(%s), {", ".join("%s" for _ in METRIC_KEYS)})
    ON CONFLICT (gpu_id, ts) DO NOTHING
"""
INSERT_PROCESS_ONE = """
    INSERT INTO monitoring_processsample
        (gpu_id, ts, pid, os_user, name, cmdline, mem_used_mib, sm_util, started_at, run_id)
    VALUES (%s, to_timestamp(%s), %s, %s, %s, %s, %s, %s, to_timestamp(%s), %s)
    ON CONFLICT (gpu_id, ts, pid) DO NOTHING
"""
UPDATE_ONE = f"""
    UPDATE {STATE_TABLE} AS gpu SET {latest_state_set("%s", "%s", lambda key: "%s")}
    WHERE gpu_id = %s AND (last_sample_at IS NULL OR last_sample_at < to_timestamp(%s))
    RETURNING gpu.gpu_id{SLOW_RETURNED}
"""


def write_by_insert(frames: list[Frame], now: datetime) -> FlushResult:
    """Every frame in one transaction, by multi-row INSERTs over arrays instead of COPY."""
    samples = [pair for frame in frames for pair in frame.samples]
    PARTITIONS.ensure(days_of(samples))
    with transaction.atomic(), bound_cursor() as cursor:
        check_claims(samples)
        if samples:
            cursor.execute(INSERT_SAMPLES, columns_of(sample_rows(samples)))
        if rows := process_rows(samples):
            cursor.execute(INSERT_PROCESSES, columns_of(rows))
        updated = update_from_arrays(cursor, latest_per_gpu(samples))
        store_links(cursor, newest_links(samples))
        node_ids = sorted({frame.node_id for frame in frames})
        cursor.execute(MARK_SEEN, [now, node_ids])
        online = mark_online(cursor, node_ids, now)
        connections = advance_sessions(cursor, frames, node_ids)
        note_late(cursor, samples, now)
    return FlushResult(updated, online, len(samples), connections)


def update_from_arrays(cursor, latest: dict) -> list[MovedGPU]:
    if not latest:
        return []
    pairs = [latest[gpu_id] for gpu_id in sorted(latest)]
    rows = [(ref.id, sample.ts, dumps(sample.processes), *sample.values) for ref, sample in pairs]
    cursor.execute(UPDATE_LATEST, columns_of(rows))
    kept = {row[0]: row[1:] for row in cursor.fetchall()}
    return [MovedGPU(ref, sample, kept[ref.id]) for ref, sample in pairs if ref.id in kept]


def write_per_sample(frames: list[Frame], now: datetime) -> FlushResult:
    """The naive writer: one transaction per frame, one statement per row."""
    results = [write_one_frame(frame, now) for frame in frames]
    moved = [gpu for result in results for gpu in result.gpu_updates]
    online = [hostname for result in results for hostname in result.nodes_online]
    return FlushResult(moved, online, sum(result.samples for result in results), results[-1].connections)


def write_one_frame(frame: Frame, now: datetime) -> FlushResult:
    PARTITIONS.ensure(days_of(frame.samples))
    moved = []
    with transaction.atomic(), connection.cursor() as cursor:
        check_claims(frame.samples)
        for ref, sample in frame.samples:
            cursor.execute(INSERT_ONE, [ref.id, sample.ts, *sample.values])
            for p in sample.processes or ():
                process = [p["pid"], p["user"], p["name"], p["cmdline"], p["mem_used_mib"], p["sm_util"]]
                cursor.execute(INSERT_PROCESS_ONE, [ref.id, sample.ts, *process, p["started_at"], p.get("run")])
            latest = [sample.ts, json.dumps(sample.processes), *sample.values, ref.id, sample.ts]
            cursor.execute(UPDATE_ONE, latest)
            if (row := cursor.fetchone()) is not None:
                moved.append(MovedGPU(ref, sample, row[1:]))
        with bound_cursor() as bound:
            store_links(bound, newest_links(frame.samples))
        cursor.execute(MARK_SEEN, [now, [frame.node_id]])
        online = mark_online(cursor, [frame.node_id], now)
        connections = advance_sessions(cursor, [frame], [frame.node_id])
    return FlushResult(moved, online, len(frame.samples), connections)


WRITERS = {"insert": write_by_insert, "per-sample": write_per_sample}
