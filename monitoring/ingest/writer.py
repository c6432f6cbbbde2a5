"""The SQL of one flush: every accepted frame of the last few milliseconds, from every node, in one transaction.

Raw samples go in with one multi-row INSERT ... ON CONFLICT (gpu_id, ts) DO NOTHING (arrays unnested
server-side, so a flush is one statement whatever its size; COPY through a staging table is the
alternative, chosen by INGEST_WRITER; docs/benchmarks.md has the figures). A replayed sample is
skipped by the primary key. The GPUs' latest state is one UPDATE ... FROM unnest(...) per flush and
only moves forward in time, so a replay never overwrites newer state.
"""

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from django.db import connection, models, transaction

from fleet.choices import NodeStatus
from monitoring.agent.metrics import METRIC_KEYS
from monitoring.ingest.validation import Sample
from monitoring.models import GPUSample
from monitoring.storage.partitions import PARTITIONS

# A sample this much older than the flush may sit in a minute that is already rolled up.
LATE_AFTER_S = 60.0
SQL_TYPES = {
    key: "bigint" if isinstance(GPUSample._meta.get_field(key), models.BigIntegerField) else "float8"
    for key in METRIC_KEYS
}
METRIC_LIST = ", ".join(METRIC_KEYS)
METRIC_ARRAYS = ", ".join(f"%s::{SQL_TYPES[key]}[]" for key in METRIC_KEYS)
METRIC_ALIASES = ", ".join(f"m_{key}" for key in METRIC_KEYS)

INSERT_SAMPLES = f"""
    INSERT INTO monitoring_gpusample (gpu_id, ts, {METRIC_LIST})
    SELECT g, to_timestamp(t), {METRIC_ALIASES}
    FROM unnest(%s::bigint[], %s::float8[], {METRIC_ARRAYS}) AS v(g, t, {METRIC_ALIASES})
    ON CONFLICT (gpu_id, ts) DO NOTHING
"""
STAGE_TABLE = "ingest_stage_gpusample"
CREATE_STAGE = f"""
    CREATE TEMPORARY TABLE IF NOT EXISTS {STAGE_TABLE}
    (g bigint, t float8, {", ".join(f"m_{key} {SQL_TYPES[key]}" for key in METRIC_KEYS)}) ON COMMIT DELETE ROWS
"""
COPY_STAGE = f"COPY {STAGE_TABLE} FROM STDIN (FORMAT BINARY)"
INSERT_FROM_STAGE = f"""
    INSERT INTO monitoring_gpusample (gpu_id, ts, {METRIC_LIST})
    SELECT g, to_timestamp(t), {METRIC_ALIASES} FROM {STAGE_TABLE}
    ON CONFLICT (gpu_id, ts) DO NOTHING
"""
INSERT_PROCESSES = """
    INSERT INTO monitoring_processsample
        (gpu_id, ts, pid, os_user, name, cmdline, mem_used_mib, sm_util, started_at)
    SELECT g, to_timestamp(t), pid, os_user, name, cmdline, mem, sm, to_timestamp(started)
    FROM unnest(%s::bigint[], %s::float8[], %s::int[], %s::text[], %s::text[], %s::text[],
                %s::float8[], %s::float8[], %s::float8[]) AS v(g, t, pid, os_user, name, cmdline, mem, sm, started)
    ON CONFLICT (gpu_id, ts, pid) DO NOTHING
"""
UPDATE_LATEST = f"""
    UPDATE fleet_gpu AS gpu SET last_sample_at = to_timestamp(v.t), processes = v.processes::jsonb,
        {", ".join(f"{key} = v.m_{key}" for key in METRIC_KEYS)}
    FROM unnest(%s::bigint[], %s::float8[], %s::text[], {METRIC_ARRAYS}) AS v(g, t, processes, {METRIC_ALIASES})
    WHERE gpu.id = v.g AND (gpu.last_sample_at IS NULL OR gpu.last_sample_at < to_timestamp(v.t))
    RETURNING gpu.id
"""
MARK_SEEN = "UPDATE fleet_node SET last_seen = %s WHERE id = ANY(%s)"
MARK_ONLINE = """
    WITH flipped AS (
        UPDATE fleet_node SET status = %s WHERE id = ANY(%s) AND status = %s RETURNING id, hostname
    ), logged AS (
        INSERT INTO monitoring_nodestatuschange (node_id, old_status, new_status, reason, created)
        SELECT id, %s, %s, 'telemetry received', %s FROM flipped
    )
    SELECT hostname FROM flipped
"""
ADVANCE_SESSIONS = """
    UPDATE monitoring_agentsession AS s SET last_seq = greatest(s.last_seq, v.seq)
    FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::bigint[]) AS v(node, session, boot_id, seq)
    WHERE s.node_id = v.node AND s.session = v.session AND s.boot_id = v.boot_id
"""
# The minute rollup and the usage rollup (monitoring/costs/rollup.py) both fold raw samples once.
NOTE_LATE = """
    UPDATE monitoring_rollupprogress SET late_since = least(coalesce(late_since, %s), %s)
    WHERE "table" IN ('minute', 'usage') AND done_until > %s
"""


@dataclass(frozen=True)
class GPURef:
    """What a connection knows about one announced GPU, from its hello."""

    id: int
    uuid: str
    index: int
    hostname: str
    memory_total_mib: int | None


@dataclass
class Frame:
    """An accepted samples frame on its way to the database."""

    node_id: int
    session: str
    boot_id: str
    seq: int
    samples: list[tuple[GPURef, Sample]]
    link: object = None


@dataclass
class FlushResult:
    gpu_updates: list[dict] = field(default_factory=list)
    nodes_online: list[str] = field(default_factory=list)
    samples: int = 0


def write_frames(frames: list[Frame], now: datetime, method: str = "insert") -> FlushResult:
    """Store every frame in one transaction; returns what changed, for the live pages."""
    samples = [pair for frame in frames for pair in frame.samples]
    PARTITIONS.ensure(days_of(samples))
    with transaction.atomic(), connection.cursor() as cursor:
        if method == "copy":
            copy_samples(cursor, samples)
        else:
            insert_samples(cursor, samples)
        insert_processes(cursor, samples)
        updated = update_latest(cursor, latest_per_gpu(samples))
        node_ids = sorted({frame.node_id for frame in frames})
        cursor.execute(MARK_SEEN, [now, node_ids])
        online = mark_online(cursor, node_ids, now)
        advance_sessions(cursor, frames)
        note_late(cursor, samples, now)
    return FlushResult([update_dict(ref, sample) for ref, sample in updated], online, len(samples))


def days_of(samples: list[tuple[GPURef, Sample]]) -> set[date]:
    if not samples:
        return set()
    stamps = [sample.ts for _, sample in samples]
    return {datetime.fromtimestamp(ts, UTC).date() for ts in (min(stamps), max(stamps))}


def sample_columns(samples: list[tuple[GPURef, Sample]]) -> list[list]:
    rows = [(ref.id, sample.ts, *sample.values) for ref, sample in samples]
    return [list(column) for column in zip(*rows, strict=True)] if rows else [[] for _ in range(2 + len(METRIC_KEYS))]


def insert_samples(cursor, samples: list[tuple[GPURef, Sample]]) -> None:
    if samples:
        cursor.execute(INSERT_SAMPLES, sample_columns(samples))


def copy_samples(cursor, samples: list[tuple[GPURef, Sample]]) -> None:
    if not samples:
        return
    cursor.execute(CREATE_STAGE)
    with cursor.cursor.copy(COPY_STAGE) as copy:
        copy.set_types(["int8", "float8", *(SQL_TYPES[key] for key in METRIC_KEYS)])
        for ref, sample in samples:
            copy.write_row((ref.id, sample.ts, *sample.values))
    cursor.execute(INSERT_FROM_STAGE)


def insert_processes(cursor, samples: list[tuple[GPURef, Sample]]) -> None:
    rows = [
        (ref.id, sample.ts, p["pid"], p["user"], p["name"], p["cmdline"], p["mem_used_mib"], p["sm_util"],
         p["started_at"])
        for ref, sample in samples
        for p in sample.processes or ()
    ]  # fmt: skip
    if rows:
        cursor.execute(INSERT_PROCESSES, [list(column) for column in zip(*rows, strict=True)])


def latest_per_gpu(samples: list[tuple[GPURef, Sample]]) -> dict[int, tuple[GPURef, Sample]]:
    latest: dict[int, tuple[GPURef, Sample]] = {}
    for ref, sample in samples:
        if ref.id not in latest or latest[ref.id][1].ts < sample.ts:
            latest[ref.id] = (ref, sample)
    return latest


def update_latest(cursor, latest: dict[int, tuple[GPURef, Sample]]) -> list[tuple[GPURef, Sample]]:
    """Move each GPU's latest state forward; returns the GPUs whose state moved."""
    if not latest:
        return []
    pairs = [latest[gpu_id] for gpu_id in sorted(latest)]  # one lock order for every flush
    rows = [(ref.id, sample.ts, json.dumps(sample.processes), *sample.values) for ref, sample in pairs]
    cursor.execute(UPDATE_LATEST, [list(column) for column in zip(*rows, strict=True)])
    moved = {row[0] for row in cursor.fetchall()}
    return [pair for pair in pairs if pair[0].id in moved]


def mark_online(cursor, node_ids: list[int], now: datetime) -> list[str]:
    online, offline = NodeStatus.ONLINE.value, NodeStatus.OFFLINE.value
    cursor.execute(MARK_ONLINE, [online, node_ids, offline, offline, online, now])
    return [row[0] for row in cursor.fetchall()]


def advance_sessions(cursor, frames: list[Frame]) -> None:
    highest: dict[tuple[int, str, str], int] = {}
    for frame in frames:
        key = (frame.node_id, frame.session, frame.boot_id)
        highest[key] = max(highest.get(key, 0), frame.seq)
    columns = [list(column) for column in zip(*((*key, seq) for key, seq in highest.items()), strict=True)]
    cursor.execute(ADVANCE_SESSIONS, columns)


def note_late(cursor, samples: list[tuple[GPURef, Sample]], now: datetime) -> None:
    """Tell the rollups to look again where a replay filled in a minute they may have done already."""
    if not samples:
        return
    oldest = min(sample.ts for _, sample in samples)
    if oldest < now.timestamp() - LATE_AFTER_S:
        when = datetime.fromtimestamp(oldest, UTC)
        cursor.execute(NOTE_LATE, [when, when, when])


def update_dict(ref: GPURef, sample: Sample) -> dict:
    """The live pages' view of one GPU after a flush (monitoring.live.apublish_gpu_updates)."""
    update = {"uuid": ref.uuid, "node": ref.hostname, "index": ref.index, "ts": sample.ts}
    update.update(zip(METRIC_KEYS, sample.values, strict=True))
    update["memory_total_mib"] = ref.memory_total_mib
    update["processes"] = sample.processes
    return update


INSERT_ONE = f"""
    INSERT INTO monitoring_gpusample (gpu_id, ts, {METRIC_LIST})
    VALUES (%s, to_timestamp(%s), {", ".join("%s" for _ in METRIC_KEYS)})
    ON CONFLICT (gpu_id, ts) DO NOTHING
"""
INSERT_PROCESS_ONE = """
    INSERT INTO monitoring_processsample
        (gpu_id, ts, pid, os_user, name, cmdline, mem_used_mib, sm_util, started_at)
    VALUES (%s, to_timestamp(%s), %s, %s, %s, %s, %s, %s, to_timestamp(%s))
    ON CONFLICT (gpu_id, ts, pid) DO NOTHING
"""
UPDATE_ONE = f"""
    UPDATE fleet_gpu SET last_sample_at = to_timestamp(%s), processes = %s::jsonb,
        {", ".join(f"{key} = %s" for key in METRIC_KEYS)}
    WHERE id = %s AND (last_sample_at IS NULL OR last_sample_at < to_timestamp(%s))
"""


def write_one_by_one(frame: Frame, now: datetime) -> FlushResult:
    """The naive writer, kept as the benchmark's baseline: one transaction per frame, one statement per row."""
    PARTITIONS.ensure(days_of(frame.samples))
    moved = []
    with transaction.atomic(), connection.cursor() as cursor:
        for ref, sample in frame.samples:
            cursor.execute(INSERT_ONE, [ref.id, sample.ts, *sample.values])
            for p in sample.processes or ():
                process = [p["pid"], p["user"], p["name"], p["cmdline"], p["mem_used_mib"], p["sm_util"]]
                cursor.execute(INSERT_PROCESS_ONE, [ref.id, sample.ts, *process, p["started_at"]])
            latest = [sample.ts, json.dumps(sample.processes), *sample.values, ref.id, sample.ts]
            cursor.execute(UPDATE_ONE, latest)
            if cursor.rowcount:
                moved.append((ref, sample))
        cursor.execute(MARK_SEEN, [now, [frame.node_id]])
        online = mark_online(cursor, [frame.node_id], now)
        advance_sessions(cursor, [frame])
    return FlushResult([update_dict(ref, sample) for ref, sample in moved], online, len(frame.samples))
