"""The SQL of one flush: every accepted frame of the last few milliseconds, from every node, in one transaction.

Raw and process samples are COPied (binary) into session-local staging tables and moved over with
INSERT ... SELECT ... ON CONFLICT DO NOTHING, so a replayed sample is skipped by the primary key.
COPY costs less client CPU and less time than a multi-row INSERT over unnested arrays (bench/baseline_writers.py
keeps that one as the benchmark's baseline; docs/benchmarks.md#write-method). The GPUs' latest
state (telemetry's GPUState rows) is one UPDATE ... FROM unnest(...) per flush and only moves forward in time,
so a replay never overwrites newer state.
"""

import json
import weakref
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import NamedTuple

import psycopg
from django.db import connection, models, transaction

from inventory.choices import NodeStatus
from monitoring.agent.metrics import METRIC_KEYS, NVLINK, SLOW_KEYS
from monitoring.ingest.claims import check_claims
from monitoring.ingest.resume import advance
from monitoring.ingest.validation import Sample
from monitoring.storage.models import GPUSample, GPUState, NvLinkState
from monitoring.storage.partitions import PARTITIONS
from wire.jsontext import dumps

# A sample this much older than the flush may sit in a minute that is already rolled up.
LATE_AFTER_S = 60.0
SQL_TYPES = {
    key: "bigint" if isinstance(GPUSample._meta.get_field(key), models.BigIntegerField) else "float8"
    for key in METRIC_KEYS
}
METRIC_LIST = ", ".join(METRIC_KEYS)
# %b: arrays go as binary parameters (text ones are quoted element by element, in Python).
METRIC_ARRAYS = ", ".join(f"%b::{SQL_TYPES[key]}[]" for key in METRIC_KEYS)
METRIC_ALIASES = ", ".join(f"m_{key}" for key in METRIC_KEYS)

PROCESS_COLUMNS = (
    ("g", "bigint"),
    ("t", "float8"),
    ("pid", "integer"),
    ("os_user", "text"),
    ("name", "text"),
    ("cmdline", "text"),
    ("mem", "float8"),
    ("sm", "float8"),
    ("started", "float8"),
    ("run", "bigint"),
)
SAMPLE_COLUMNS = (("g", "bigint"), ("t", "float8"), *((f"m_{key}", SQL_TYPES[key]) for key in METRIC_KEYS))


@dataclass(frozen=True)
class Stage:
    """A session-local table that COPY fills for one flush and that empties itself at commit."""

    name: str
    columns: tuple[tuple[str, str], ...]

    @property
    def create(self) -> str:
        columns = ", ".join(f"{name} {sql_type}" for name, sql_type in self.columns)
        return f"CREATE TEMPORARY TABLE IF NOT EXISTS {self.name} ({columns}) ON COMMIT DELETE ROWS"

    @property
    def copy(self) -> str:
        return f"COPY {self.name} FROM STDIN (FORMAT BINARY)"

    @property
    def types(self) -> list[str]:
        return [{"bigint": "int8", "integer": "int4"}.get(sql_type, sql_type) for _, sql_type in self.columns]


SAMPLE_STAGE = Stage("ingest_stage_gpusample", SAMPLE_COLUMNS)
PROCESS_STAGE = Stage("ingest_stage_processsample", PROCESS_COLUMNS)
# One statement moves both: the samples that are new (a replayed one conflicts and is skipped), then the
# processes of exactly those samples, with a plain insert (ON CONFLICT costs more per process row;
# docs/benchmarks.md#write-method).
INSERT_FROM_STAGES = f"""
    WITH new AS (
        INSERT INTO monitoring_gpusample (gpu_id, ts, {METRIC_LIST})
        SELECT g, to_timestamp(t), {METRIC_ALIASES} FROM ingest_stage_gpusample
        ON CONFLICT (gpu_id, ts) DO NOTHING
        RETURNING gpu_id, ts
    )
    INSERT INTO monitoring_processsample
        (gpu_id, ts, pid, os_user, name, cmdline, mem_used_mib, sm_util, started_at, run_id)
    SELECT p.g, new.ts, p.pid, p.os_user, p.name, p.cmdline, p.mem, p.sm, to_timestamp(p.started), p.run
    FROM ingest_stage_processsample AS p JOIN new ON new.gpu_id = p.g AND new.ts = to_timestamp(p.t)
"""


def latest_value(key: str, new: str) -> str:
    """A slow field missing from a sample (metrics.SLOW_KEYS) keeps the GPU's latest value."""
    return f"COALESCE({new}, gpu.{key})" if key in SLOW_KEYS else new


def latest_state_set(time: str, processes: str, value_of) -> str:
    """The SET list of a GPU's latest state: its time, its processes and every metric (value_of(key) gives each)."""
    metrics = ", ".join(f"{key} = {latest_value(key, value_of(key))}" for key in METRIC_KEYS)
    return f"last_sample_at = to_timestamp({time}), processes = {processes}::jsonb, {metrics}"


SLOW_RETURNED = "".join(f", gpu.{key}" for key in SLOW_KEYS)
STATE_TABLE = GPUState._meta.db_table
LINKS_TABLE = NvLinkState._meta.db_table
# Each GPU's latest state, its metric values read from the sample stage the flush has filled: sent as arrays they
# cost the server time for every field of every GPU (psycopg dumps list elements in Python).
# Of two staged rows of one GPU and time, the first copied is the one taken, as from the arrays.
UPDATE_LATEST_STAGED = f"""
    UPDATE {STATE_TABLE} AS gpu SET {latest_state_set("v.t", "v.processes", lambda key: f"v.m_{key}")}
    FROM (
        SELECT DISTINCT ON (n.g) n.g, n.t, n.processes, {", ".join(f"s.m_{key}" for key in METRIC_KEYS)}
        FROM unnest(%b::bigint[], %b::float8[], %b::text[]) AS n(g, t, processes)
        JOIN {SAMPLE_STAGE.name} AS s ON s.g = n.g AND s.t = n.t
        ORDER BY n.g, s.ctid
    ) AS v
    WHERE gpu.gpu_id = v.g AND (gpu.last_sample_at IS NULL OR gpu.last_sample_at < to_timestamp(v.t))
    RETURNING gpu.gpu_id{SLOW_RETURNED}
"""
# Per-link NVLink figures keep their own row (storage.models.NvLinkState), written only when a sample brings them,
# and only forward in time, so a replayed backlog never overwrites newer figures.
STORE_LINKS = f"""
    INSERT INTO {LINKS_TABLE} (gpu_id, ts, links)
    SELECT g, t, l::jsonb FROM unnest(%b::bigint[], %b::float8[], %b::text[]) AS v(g, t, l)
    ON CONFLICT (gpu_id) DO UPDATE SET ts = EXCLUDED.ts, links = EXCLUDED.links
    WHERE {LINKS_TABLE}.ts < EXCLUDED.ts
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
# The sessions of the flush's nodes, locked in one order; their seq watermark moves in Python (resume.py).
LOCK_SESSIONS = """
    SELECT node_id, session, boot_id, last_seq, ahead, connection FROM monitoring_agentsession
    WHERE node_id = ANY(%s) ORDER BY node_id FOR UPDATE
"""
ADVANCE_SESSIONS = """
    UPDATE monitoring_agentsession AS s SET last_seq = v.last_seq,
        ahead = ARRAY(SELECT jsonb_array_elements_text(v.ahead::jsonb)::bigint)
    FROM unnest(%b::bigint[], %b::bigint[], %b::text[]) AS v(node, last_seq, ahead)
    WHERE s.node_id = v.node
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


class MovedGPU(NamedTuple):
    """A GPU whose latest state a flush moved. Its live update (update_dict) is made only if it is sent: as
    fast as acks allow a GPU moves dozens of times between two of the live pages' ticks, and only the last
    one goes out (monitoring.live.fanout.Coalescer)."""

    ref: GPURef
    sample: Sample
    slow: tuple  # the slow fields (SLOW_KEYS) as the GPU's row now holds them

    @property
    def uuid(self) -> str:
        return self.ref.uuid

    @property
    def carries_links(self) -> bool:
        return self.sample.links is not None

    def live_update(self) -> dict:
        return update_dict(self.ref, self.sample, dict(zip(SLOW_KEYS, self.slow, strict=True)))


@dataclass
class FlushResult:
    gpu_updates: list[MovedGPU] = field(default_factory=list)
    nodes_online: list[str] = field(default_factory=list)
    samples: int = 0
    # node → its newest connection; a frame that came over another one came over a replaced connection.
    connections: dict[int, str] = field(default_factory=dict)


def write_frames(frames: list[Frame], now: datetime) -> FlushResult:
    """Store every frame in one transaction; returns what changed, for the live pages."""
    samples = [pair for frame in frames for pair in frame.samples]
    PARTITIONS.ensure(days_of(samples))
    prepare_stages()
    with transaction.atomic(), bound_cursor() as cursor:
        check_claims(samples)
        copy_rows(cursor, SAMPLE_STAGE, sample_rows(samples))
        copy_rows(cursor, PROCESS_STAGE, process_rows(samples))
        if samples:
            cursor.execute(INSERT_FROM_STAGES)
        updated = update_latest(cursor, latest_per_gpu(samples))
        store_links(cursor, newest_links(samples))
        node_ids = sorted({frame.node_id for frame in frames})
        cursor.execute(MARK_SEEN, [now, node_ids])
        online = mark_online(cursor, node_ids, now)
        connections = advance_sessions(cursor, frames, node_ids)
        note_late(cursor, samples, now)
    return FlushResult(updated, online, len(samples), connections)


def bound_cursor() -> psycopg.Cursor:
    """A cursor with server-side binding: the arrays travel as binary parameters instead of SQL text.

    Django's cursors bind on the client, which renders every array as a literal for PostgreSQL to parse
    back, at several times the CPU (docs/benchmarks.md#write-method). Same connection, same transaction.
    """
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


def days_of(samples: list[tuple[GPURef, Sample]]) -> set[date]:
    if not samples:
        return set()
    stamps = [sample.ts for _, sample in samples]
    return {datetime.fromtimestamp(ts, UTC).date() for ts in (min(stamps), max(stamps))}


def sample_rows(samples: list[tuple[GPURef, Sample]]) -> list[tuple]:
    return [(ref.id, sample.ts, *sample.values) for ref, sample in samples]


def process_rows(samples: list[tuple[GPURef, Sample]]) -> list[tuple]:
    """One row per process of each sample; a pid listed twice in one sample (or a frame twice in a flush) once."""
    seen: set[tuple[int, float, int]] = set()
    rows = []
    for ref, sample in samples:
        for p in sample.processes or ():
            key = (ref.id, sample.ts, p["pid"])
            if key not in seen:
                seen.add(key)
                details = (
                    p["user"],
                    p["name"],
                    p["cmdline"],
                    p["mem_used_mib"],
                    p["sm_util"],
                    p["started_at"],
                    p.get("run"),
                )
                rows.append((*key, *details))
    return rows


def columns_of(rows: list[tuple]) -> list[list]:
    return [list(column) for column in zip(*rows, strict=True)]


_staged_connections: weakref.WeakSet = weakref.WeakSet()


def prepare_stages() -> None:
    """Create the staging tables once per database connection, outside the flush (a rollback would undo them)."""
    connection.ensure_connection()
    if connection.connection not in _staged_connections:
        with bound_cursor() as cursor:
            for stage in (SAMPLE_STAGE, PROCESS_STAGE):
                cursor.execute(stage.create)
        if not connection.in_atomic_block:  # inside one, a rollback would take the tables with it
            _staged_connections.add(connection.connection)


def copy_rows(cursor, stage: Stage, rows: list[tuple]) -> None:
    if not rows:
        return
    with cursor.copy(stage.copy) as copy:
        copy.set_types(stage.types)
        for row in rows:
            copy.write_row(row)


def latest_per_gpu(samples: list[tuple[GPURef, Sample]]) -> dict[int, tuple[GPURef, Sample]]:
    latest: dict[int, tuple[GPURef, Sample]] = {}
    for ref, sample in samples:
        if ref.id not in latest or latest[ref.id][1].ts < sample.ts:
            latest[ref.id] = (ref, sample)
    return latest


def newest_links(samples: list[tuple[GPURef, Sample]]) -> dict[int, Sample]:
    """Each GPU's newest sample with per-link NVLink figures: a replayed backlog may carry them in an older one."""
    newest: dict[int, Sample] = {}
    for ref, sample in samples:
        if sample.links is not None and (ref.id not in newest or newest[ref.id].ts < sample.ts):
            newest[ref.id] = sample
    return newest


def update_latest(cursor, latest: dict[int, tuple[GPURef, Sample]]) -> list[MovedGPU]:
    """Move each GPU's latest state forward, its metric values read from SAMPLE_STAGE; returns the GPUs whose
    state moved, with their slow fields now."""
    if not latest:
        return []
    pairs = [latest[gpu_id] for gpu_id in sorted(latest)]  # one lock order for every flush
    rows = [(ref.id, sample.ts, dumps(sample.processes)) for ref, sample in pairs]
    cursor.execute(UPDATE_LATEST_STAGED, [list(column) for column in zip(*rows, strict=True)])
    kept = {row[0]: row[1:] for row in cursor.fetchall()}
    return [MovedGPU(ref, sample, kept[ref.id]) for ref, sample in pairs if ref.id in kept]


def store_links(cursor, newest: dict[int, Sample]) -> None:
    """Keep each GPU's newest per-link figures (an empty list for a GPU that reports no NVLink)."""
    if newest:
        rows = [(gpu_id, newest[gpu_id].ts, dumps(newest[gpu_id].links)) for gpu_id in sorted(newest)]
        cursor.execute(STORE_LINKS, columns_of(rows))


def kept_links(sample: Sample) -> dict | None:
    """Per-link NVLink values as the server keeps them, with their time (metrics.current_links reads them)."""
    return NvLinkState.figures(sample.ts, sample.links)


def mark_online(cursor, node_ids: list[int], now: datetime) -> list[str]:
    online, offline = NodeStatus.ONLINE.value, NodeStatus.OFFLINE.value
    cursor.execute(MARK_ONLINE, [online, node_ids, offline, offline, online, now])
    return [row[0] for row in cursor.fetchall()]


def advance_sessions(cursor, frames: list[Frame], node_ids: list[int]) -> dict[int, str]:
    """Move each session's watermark over the seqs this flush settles; returns each node's newest connection."""
    cursor.execute(LOCK_SESSIONS, [node_ids])
    rows = cursor.fetchall()
    seqs: dict[tuple[int, str, str], list[int]] = {}
    for frame in frames:
        seqs.setdefault((frame.node_id, frame.session, frame.boot_id), []).append(frame.seq)
    moved = []
    for node_id, session, boot_id, last_seq, ahead, _ in rows:
        settled = seqs.get((node_id, session, boot_id))
        if settled:
            watermark = advance(last_seq, ahead, settled)
            if watermark != (last_seq, ahead):
                moved.append((node_id, watermark[0], json.dumps(watermark[1])))
    if moved:
        cursor.execute(ADVANCE_SESSIONS, columns_of(moved))
    return {row[0]: row[5] for row in rows}


def note_late(cursor, samples: list[tuple[GPURef, Sample]], now: datetime) -> None:
    """Tell the rollups to look again where a replay filled in a minute they may have done already."""
    if not samples:
        return
    oldest = min(sample.ts for _, sample in samples)
    if oldest < now.timestamp() - LATE_AFTER_S:
        when = datetime.fromtimestamp(oldest, UTC)
        cursor.execute(NOTE_LATE, [when, when, when])


def update_dict(ref: GPURef, sample: Sample, slow: dict) -> dict:
    """The live pages' view of one GPU after a flush (monitoring.live.fanout.apublish_gpu_updates)."""
    update = {"uuid": ref.uuid, "node": ref.hostname, "index": ref.index, "ts": sample.ts}
    update.update(zip(METRIC_KEYS, sample.values, strict=True))
    update.update(slow)
    if sample.links is not None:  # a live update carries per-link figures only when its sample brought them
        update[NVLINK] = kept_links(sample)
    update["memory_total_mib"] = ref.memory_total_mib
    update["processes"] = sample.processes
    return update
