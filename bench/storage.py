"""Raw-sample storage layouts under the retention pattern: BRIN on one table vs daily partitions.

    DATABASE_URL=... python bench/storage.py [--gpus 8] [--days 4]

Both layouts get the same rows in time order (1 Hz per GPU), lose their oldest day to retention,
then take another day. We time the inserts (ON CONFLICT DO NOTHING, as the ingest does), the
retention step, a one-minute rollup over all GPUs and a 6-hour series of one GPU, each on the
newest day, with the buffers each query touched. Runs in a scratch schema that it drops at the end.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from monitoring.storage.columns import SAMPLE_COLUMNS  # noqa: E402

SCHEMA = "bench_storage"
DAY = 86400
METRICS = ", ".join(f"{name} {kind}" for name, kind in SAMPLE_COLUMNS)  # the raw table's metric columns
START = 1_790_000_000 - 1_790_000_000 % DAY  # a UTC midnight


def day_bounds(day: int) -> tuple[float, float]:
    return START + day * DAY, START + (day + 1) * DAY


def create_brin(cur) -> None:
    cur.execute(f"CREATE TABLE {SCHEMA}.brin (gpu_id bigint NOT NULL, ts timestamptz NOT NULL, {METRICS})")
    cur.execute(f"CREATE UNIQUE INDEX ON {SCHEMA}.brin (gpu_id, ts)")
    cur.execute(f"CREATE INDEX ON {SCHEMA}.brin USING brin (ts) WITH (autosummarize = on)")


def create_partitioned(cur, days: int) -> None:
    cur.execute(
        f"CREATE TABLE {SCHEMA}.part (gpu_id bigint NOT NULL, ts timestamptz NOT NULL, {METRICS},"
        " PRIMARY KEY (gpu_id, ts)) PARTITION BY RANGE (ts)"
    )
    cur.execute(f"CREATE INDEX ON {SCHEMA}.part USING brin (ts) WITH (autosummarize = on)")
    for day in range(days):
        low, high = day_bounds(day)
        cur.execute(
            f"CREATE TABLE {SCHEMA}.part_d{day} PARTITION OF {SCHEMA}.part"
            f" FOR VALUES FROM (to_timestamp({low})) TO (to_timestamp({high}))"
        )


def insert_day(cur, table: str, day: int, gpus: int) -> float:
    """One day of 1 Hz samples for every GPU, in time order, in 1-hour statements."""
    low, _ = day_bounds(day)
    started = time.perf_counter()
    for hour in range(24):
        first = low + hour * 3600
        cur.execute(
            f"""INSERT INTO {SCHEMA}.{table}
                SELECT g, to_timestamp(t), random() * 100, random() * 100, random() * 80000, 30 + random() * 50,
                       random() * 700, 1980, 2619, NULL, random() * 9000, random() * 200000, 0, 4
                FROM generate_series(%s::bigint, %s::bigint - 1) AS t, generate_series(1, %s) AS g
                ORDER BY t, g
                ON CONFLICT DO NOTHING""",
            (first, first + 3600, gpus),
        )
    return time.perf_counter() - started


def retire_day_brin(conn, day: int, chunk: int) -> float:
    _, high = day_bounds(day)
    started = time.perf_counter()
    while True:
        with conn.transaction():
            deleted = conn.execute(
                f"""DELETE FROM {SCHEMA}.brin WHERE ctid = ANY(ARRAY(
                        SELECT ctid FROM {SCHEMA}.brin WHERE ts < to_timestamp(%s) LIMIT %s))""",
                (high, chunk),
            ).rowcount
        if deleted < chunk:
            break
    conn.execute(f"VACUUM {SCHEMA}.brin")  # autovacuum's work soon after, counted: it frees the space for reuse
    return time.perf_counter() - started


def retire_day_partitioned(conn, day: int) -> float:
    started = time.perf_counter()
    with conn.transaction():
        conn.execute(f"DROP TABLE {SCHEMA}.part_d{day}")
    return time.perf_counter() - started


def timed_query(cur, sql: str, params: tuple, repeat: int) -> tuple[float, int]:
    """Median milliseconds and the shared buffers the plan touched."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        cur.execute(sql, params)
        cur.fetchall()
        times.append((time.perf_counter() - started) * 1000)
    cur.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
    plan = cur.fetchone()[0][0]["Plan"]
    buffers = plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)
    return statistics.median(times), buffers


def queries(cur, table: str, day: int) -> dict:
    low, _ = day_bounds(day)
    minute = low + 13 * 3600 + 17 * 60
    rollup = (
        f"SELECT gpu_id, min(util_gpu), avg(util_gpu), max(util_gpu), count(*) FROM {SCHEMA}.{table}"
        " WHERE ts >= to_timestamp(%s) AND ts < to_timestamp(%s) GROUP BY gpu_id"
    )
    series = (
        f"SELECT ts, util_gpu FROM {SCHEMA}.{table}"
        " WHERE gpu_id = 3 AND ts >= to_timestamp(%s) AND ts < to_timestamp(%s)"
    )
    return {
        "minute rollup": timed_query(cur, rollup, (minute, minute + 60), 9),
        "6 h series of one GPU": timed_query(cur, series, (low + 6 * 3600, low + 12 * 3600), 5),
    }


def size(cur, table: str) -> int:
    cur.execute(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname LIKE %s"
        " AND c.relkind IN ('r', 'p')",
        (SCHEMA, table + "%"),
    )
    return int(cur.fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--days", type=int, default=3, help="days kept before retention removes the oldest")
    parser.add_argument("--chunk", type=int, default=10_000, help="rows per retention DELETE")
    args = parser.parse_args()
    url = os.environ["DATABASE_URL"]
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        cur.execute(f"CREATE SCHEMA {SCHEMA}")
        create_brin(cur)
        create_partitioned(cur, args.days + 1)
        try:
            rows_per_day = args.gpus * DAY
            results = {}
            for table in ("brin", "part"):
                insert_s = sum(insert_day(cur, table, day, args.gpus) for day in range(args.days))
                wal_before = cur.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
                if table == "brin":
                    retire_s = retire_day_brin(conn, 0, args.chunk)
                else:
                    retire_s = retire_day_partitioned(conn, 0)
                wal = cur.execute("SELECT pg_current_wal_lsn() - %s::pg_lsn", (wal_before,)).fetchone()[0]
                insert_s += insert_day(cur, table, args.days, args.gpus)
                # What autovacuum does to a table that only grows: summarize the new BRIN ranges.
                cur.execute(f"VACUUM ANALYZE {SCHEMA}.{table}")
                results[table] = {
                    "insert rows/s": rows_per_day * (args.days + 1) / insert_s,
                    "retire one day (ms)": retire_s * 1000,
                    "WAL to retire it (MiB)": float(wal) / 2**20,
                    **queries(cur, table, args.days),
                    "size (MiB)": size(cur, table) / 2**20,
                }
            report(results, args)
        finally:
            cur.execute(f"DROP SCHEMA {SCHEMA} CASCADE")


def report(results: dict, args) -> None:
    print(f"{args.gpus} GPUs at 1 Hz, {args.days} days kept, then the oldest retired and one more day added")
    print(f"{'':<28}{'BRIN, one table':>22}{'daily partitions':>22}")
    for key in results["brin"]:
        a, b = results["brin"][key], results["part"][key]
        if isinstance(a, tuple):
            print(f"{key + ' (ms, buffers)':<28}{f'{a[0]:.2f} ms, {a[1]}':>22}{f'{b[0]:.2f} ms, {b[1]}':>22}")
        else:
            print(f"{key:<28}{a:>22,.1f}{b:>22,.1f}")


if __name__ == "__main__":
    main()
