"""The write choices of one ingest flush, measured in isolation on scratch tables (no server, no agents).

    DATABASE_URL=... python bench/ingest_writes.py [--rows 4096] [--repeat 7]

1. How raw samples get in: one multi-row INSERT over unnested arrays (bound on the server, or on the
   client as Django's cursors bind), one INSERT from a JSON array,
   or binary COPY into a staging table then INSERT ... SELECT; all ON CONFLICT DO NOTHING.
2. A database-level foreign key from the raw table to fleet_gpu (deferred, as Django makes it), or none.
3. Process samples: INSERT ... ON CONFLICT DO NOTHING, or a plain INSERT (the ingest inserts processes
   only for samples that were new); and what the (os_user, ts) index costs.

Each variant is timed per flush of --rows rows, transaction and commit included, the variants taking
turns so that background load hits them alike; medians are reported with the client CPU the variant
took. Scratch tables live in a schema of their own that is dropped at the end.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from monitoring.storage.columns import SAMPLE_COLUMNS  # noqa: E402

SCHEMA = "bench_writes"
METRICS = SAMPLE_COLUMNS  # (column, type) of the raw table's metrics
COLUMNS = ", ".join(f"{name} {kind}" for name, kind in METRICS)
ALIASES = ", ".join(f"m{i}" for i in range(len(METRICS)))
# One sample's readings; a metric not named here is N/A (NULL), as an agent would send it.
READING = {"util_gpu": 97.0, "util_mem": 41.0, "mem_used_mib": 60211.0, "temp_c": 71.0, "power_w": 512.3,
           "sm_clock_mhz": 1980.0, "mem_clock_mhz": 2619.0, "pcie_tx_kib_s": 1200.0, "pcie_rx_kib_s": 88000.0,
           "ecc_volatile": 0, "clocks_event_reasons": 0}  # fmt: skip
VALUES = tuple(READING.get(name) for name, _ in METRICS)
PROCESS_COLUMNS = (
    "gpu_id bigint NOT NULL, ts timestamptz NOT NULL, pid integer NOT NULL CHECK (pid >= 0), "
    "os_user varchar(64) NOT NULL, name varchar(255) NOT NULL, cmdline text NOT NULL, "
    "mem_used_mib float8, sm_util float8, started_at timestamptz, PRIMARY KEY (gpu_id, ts, pid)"
)


def create(conn, gpu_ids: list[int]) -> None:
    conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    conn.execute(f"CREATE SCHEMA {SCHEMA}")
    foreign_key = "REFERENCES fleet_gpu (id) DEFERRABLE INITIALLY DEFERRED"
    for table, key in (("samples", ""), ("samples_fk", foreign_key)):
        conn.execute(
            f"CREATE TABLE {SCHEMA}.{table} (gpu_id bigint NOT NULL {key}, ts timestamptz NOT NULL, {COLUMNS},"
            " PRIMARY KEY (gpu_id, ts)) PARTITION BY RANGE (ts)"
        )
        conn.execute(f"CREATE INDEX ON {SCHEMA}.{table} USING brin (ts) WITH (autosummarize = on)")
        conn.execute(
            f"CREATE TABLE {SCHEMA}.{table}_p PARTITION OF {SCHEMA}.{table} FOR VALUES FROM (MINVALUE) TO (MAXVALUE)"
        )
    for table, index in (("processes", True), ("processes_noindex", False)):
        conn.execute(f"CREATE TABLE {SCHEMA}.{table} ({PROCESS_COLUMNS}) PARTITION BY RANGE (ts)")
        if index:
            conn.execute(f"CREATE INDEX ON {SCHEMA}.{table} (os_user, ts)")
        conn.execute(
            f"CREATE TABLE {SCHEMA}.{table}_p PARTITION OF {SCHEMA}.{table} FOR VALUES FROM (MINVALUE) TO (MAXVALUE)"
        )


def sample_rows(gpu_ids: list[int], rows: int, start: float) -> list[tuple]:
    per_gpu = rows // len(gpu_ids)
    return [(g, start + i * 0.001, *VALUES) for i in range(per_gpu) for g in gpu_ids]


def insert_unnest(cur, table: str, rows: list[tuple]) -> None:
    arrays = ", ".join(f"%b::{kind}[]" for _, kind in METRICS)
    cur.execute(
        f"INSERT INTO {SCHEMA}.{table} SELECT g, to_timestamp(t), {ALIASES}"
        f" FROM unnest(%b::bigint[], %b::float8[], {arrays}) AS v(g, t, {ALIASES}) ON CONFLICT DO NOTHING",
        [list(column) for column in zip(*rows, strict=True)],
    )


def insert_unnest_client_bound(cur, table: str, rows: list[tuple]) -> None:
    """The same statement bound on the client, as Django's cursors do: arrays rendered as SQL text."""
    client = psycopg.ClientCursor(cur.connection)
    arrays = ", ".join(f"%s::{kind}[]" for _, kind in METRICS)
    client.execute(
        f"INSERT INTO {SCHEMA}.{table} SELECT g, to_timestamp(t), {ALIASES}"
        f" FROM unnest(%s::bigint[], %s::float8[], {arrays}) AS v(g, t, {ALIASES}) ON CONFLICT DO NOTHING",
        [list(column) for column in zip(*rows, strict=True)],
    )


def insert_json(cur, table: str, rows: list[tuple]) -> None:
    casts = ", ".join(f"(r->>{i + 2})::{kind}" for i, (_, kind) in enumerate(METRICS))
    cur.execute(
        f"INSERT INTO {SCHEMA}.{table} SELECT (r->>0)::bigint, to_timestamp((r->>1)::float8), {casts}"
        " FROM json_array_elements(%s::json) AS r ON CONFLICT DO NOTHING",
        [json.dumps(rows)],
    )


def insert_copy(cur, table: str, rows: list[tuple]) -> None:
    staging = ", ".join(f"m{i} {kind}" for i, (_, kind) in enumerate(METRICS))
    cur.execute(f"CREATE TEMP TABLE IF NOT EXISTS stage (g bigint, t float8, {staging}) ON COMMIT DELETE ROWS")
    with cur.copy("COPY stage FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "float8", *(kind for _, kind in METRICS)])
        for row in rows:
            copy.write_row(row)
    cur.execute(f"INSERT INTO {SCHEMA}.{table} SELECT g, to_timestamp(t), {ALIASES} FROM stage ON CONFLICT DO NOTHING")


def insert_processes(cur, table: str, rows: list[tuple], conflict: bool) -> None:
    cur.execute(
        "CREATE TEMP TABLE IF NOT EXISTS pstage (g bigint, t float8, pid int, os_user text, name text, cmdline text,"
        " mem float8, sm float8, started float8) ON COMMIT DELETE ROWS"
    )
    with cur.copy("COPY pstage FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "float8", "int4", "text", "text", "text", "float8", "float8", "float8"])
        for gpu, ts, *_ in rows:
            copy.write_row(
                (gpu, ts, 4000 + gpu % 1000, "alice", "python", "python train.py --lr 3e-4", 59000.0, 95.0, ts - 600)
            )
    tail = " ON CONFLICT DO NOTHING" if conflict else ""
    cur.execute(
        f"INSERT INTO {SCHEMA}.{table} SELECT g, to_timestamp(t), pid, os_user, name, cmdline, mem, sm,"
        f" to_timestamp(started) FROM pstage{tail}"
    )


VARIANTS = {
    "samples: multi-row INSERT (unnest)": lambda cur, rows: insert_unnest(cur, "samples", rows),
    "samples: multi-row INSERT, client-bound": lambda cur, rows: insert_unnest_client_bound(cur, "samples", rows),
    "samples: INSERT from a JSON array": lambda cur, rows: insert_json(cur, "samples", rows),
    "samples: COPY + INSERT (chosen)": lambda cur, rows: insert_copy(cur, "samples", rows),
    "samples: COPY + INSERT, with foreign key": lambda cur, rows: insert_copy(cur, "samples_fk", rows),
    "processes: ON CONFLICT DO NOTHING": lambda cur, rows: insert_processes(cur, "processes", rows, True),
    "processes: plain INSERT (chosen)": lambda cur, rows: insert_processes(cur, "processes", rows, False),
    "processes: plain, no (os_user, ts) index": lambda cur, rows: insert_processes(
        cur, "processes_noindex", rows, False
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=4096, help="rows per flush")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    url = os.environ["DATABASE_URL"]
    with psycopg.connect(url, autocommit=True) as setup:
        gpu_ids = [row[0] for row in setup.execute("SELECT id FROM fleet_gpu ORDER BY id LIMIT 8")]
        if len(gpu_ids) < 8:
            raise SystemExit("needs 8 GPUs in fleet_gpu (the foreign-key variant refers to them); run make demo once")
        create(setup, gpu_ids)
    wall: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
    start = time.time() - 1800
    try:
        with psycopg.connect(url) as conn:
            for turn in range(args.repeat):
                names = list(VARIANTS)
                random.shuffle(names)
                for name in names:
                    start += 100
                    rows = sample_rows(gpu_ids, args.rows, start)
                    began, began_cpu = time.perf_counter(), time.process_time()
                    with conn.transaction():
                        VARIANTS[name](conn.cursor(), rows)
                    if turn:  # the first turn warms caches and makes the staging tables
                        wall[name].append(time.perf_counter() - began)
                        cpu[name].append(time.process_time() - began_cpu)
    finally:
        with psycopg.connect(url, autocommit=True) as teardown:
            teardown.execute(f"DROP SCHEMA {SCHEMA} CASCADE")
    print(f"{args.rows} rows per flush, median of {args.repeat - 1} turns, commit included")
    print(f"{'variant':<44}{'ms / flush':>12}{'client CPU ms':>15}")
    for name in VARIANTS:
        print(f"{name:<44}{statistics.median(wall[name]) * 1000:>12.1f}{statistics.median(cpu[name]) * 1000:>15.1f}")


if __name__ == "__main__":
    main()
