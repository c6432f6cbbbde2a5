"""How long one evaluation of every alert rule takes for 1,000 GPUs with an hour of telemetry.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/fleet_alerts_bench REDIS_URL=… SECRET_KEY=dev \\
        python bench/alerts.py [--gpus 1000] [--interval 1] [--repeats 5] [--baseline-tree DIR]

The database named in DATABASE_URL is dropped and made again (its name must end in "_bench"). The
script migrates it, adds GPUs on 8-GPU nodes and writes an hour of 1 Hz samples for each through
server-side INSERT … SELECT: a tenth of the GPUs hold a forgotten process at 0 %, a tenth a serving
process that worked in the hour's first ten minutes and idled since (underused: idle over the window,
not forgotten), one in fifty trains hot with thermal throttling, a tenth are empty and the rest train
with a short dip every minute. It then runs the telemetry beat task's minute rollup, so the rules read
what they read in production.

Measured: the first evaluation (it opens the alerts), then steady-state evaluations; the baseline
in the same run is the same idle and health verdicts computed the naive way, with a handful of
queries per GPU. Both must agree on which processes are idle. The usage rollup (a beat task every
minute) is timed too: its first run over the hour, then a run that folds one more minute.

`--baseline-tree DIR` (a checkout of an earlier commit, e.g. `git worktree add /tmp/before <commit>`)
also times that tree's `engine.evaluate` on the same database in the same run, between two rounds of
this tree's, so the two evaluations are compared under the same load. The floor, a loop of as many
`SELECT 1` round trips as one evaluation makes, is timed in the same run too: on a loaded machine,
the evaluation's ratio to it carries over where its milliseconds do not. Each evaluation's CPU (this
process and its PostgreSQL backend, from /proc) is reported beside its milliseconds: on a loaded machine
the milliseconds are mostly waiting for a core, the CPU is the work.
"""

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")
from monitoring.agent.metrics import METRIC_KEYS  # noqa: E402

WINDOW = timedelta(minutes=30)
USERS = 20


def recreate_database() -> None:
    url = urlsplit(os.environ["DATABASE_URL"])
    name = url.path.lstrip("/")
    if not name.endswith("_bench"):
        sys.exit(f"refusing to drop {name!r}: point DATABASE_URL at a scratch database whose name ends in _bench")
    admin = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def setup_django() -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def role_of(index: int) -> str:
    if index % 10 == 0:
        return "forgotten"
    if index % 10 == 1:
        return "empty"
    if index % 10 == 3:
        return "serving"
    if index % 50 == 2:
        return "hot"
    return "training"


def make_fleet(gpus: int) -> dict[int, str]:
    from django.contrib.auth import get_user_model

    from inventory.models import GPU, GPUModel, Node, OsAccount, Project

    model = GPUModel.objects.get(name="A100 80GB")
    project = Project.objects.create(name="bench", monthly_budget=100_000)
    for u in range(USERS):
        user = get_user_model().objects.create_user(f"user{u:02d}", f"user{u:02d}@example.org")
        OsAccount.objects.create(username=f"os{u:02d}", user=user)
        project.members.add(user)
    nodes = Node.objects.bulk_create(Node(hostname=f"bench-{n:03d}") for n in range((gpus + 7) // 8))
    rows = GPU.objects.bulk_create(
        GPU(node=nodes[i // 8], index=i % 8, uuid=f"GPU-bench-{i:05d}", model=model) for i in range(gpus)
    )
    return {gpu.id: role_of(i) for i, gpu in enumerate(rows)}


# Each GPU's readings by role and second; a metric not named here is N/A (NULL), as an agent would send it.
UTIL = (
    "CASE WHEN r.role IN ('forgotten', 'empty') THEN 0 WHEN r.role = 'serving' THEN "
    "(CASE WHEN t < %(start)s + 600 THEN 95 ELSE 0 END) WHEN t %% 60 < 5 THEN 3 ELSE 92 END"
)
READINGS = {
    "util_gpu": UTIL,
    "util_mem": "30",
    "mem_used_mib": "CASE WHEN r.role = 'empty' THEN 4 ELSE 60000 END",
    "temp_c": "CASE WHEN r.role = 'hot' THEN 88 ELSE 60 END",
    "power_w": "300",
    "sm_clock_mhz": "1410",
    "mem_clock_mhz": "1593",
    "pcie_tx_kib_s": "1000",
    "pcie_rx_kib_s": "50000",
    "ecc_volatile": "0",
    "clocks_event_reasons": "CASE WHEN r.role = 'hot' THEN 32 ELSE 0 END",
}
SAMPLES_SQL = f"""
INSERT INTO monitoring_gpusample (gpu_id, ts, {", ".join(METRIC_KEYS)})
SELECT r.gpu_id, to_timestamp(t), {", ".join(READINGS.get(key, "NULL") for key in METRIC_KEYS)}
FROM bench_roles r, generate_series(%(start)s::bigint, %(end)s::bigint - 1, %(step)s) AS t
"""

PROCESSES_SQL = f"""
INSERT INTO monitoring_processsample (gpu_id, ts, pid, os_user, name, cmdline, mem_used_mib, sm_util, started_at)
SELECT r.gpu_id, to_timestamp(t), 10000 + r.gpu_id, 'os' || lpad((r.gpu_id %% 20)::text, 2, '0'), 'python',
       'python train.py', 59000, {UTIL}, to_timestamp(%(started)s)
FROM bench_roles r, generate_series(%(start)s::bigint, %(end)s::bigint - 1, %(step)s) AS t
WHERE r.role <> 'empty'
"""


def write_telemetry(roles: dict[int, str], now: datetime, interval: int) -> float:
    from django.db import connection, transaction

    from monitoring.storage import partitions, rollups
    from monitoring.storage.models import GPUState

    begin = time.perf_counter()
    start = now - timedelta(hours=1)
    partitions.create_missing({start.date(), now.date()})
    params = {"start": int(start.timestamp()), "end": int(now.timestamp()), "step": interval}
    params["started"] = int((start - timedelta(days=2)).timestamp())
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE bench_roles (gpu_id bigint, role text) ON COMMIT DROP")
        cursor.executemany("INSERT INTO bench_roles VALUES (%s, %s)", list(roles.items()))
        cursor.execute(SAMPLES_SQL, params)
        cursor.execute(PROCESSES_SQL, params)
    last = datetime.fromtimestamp(params["end"] - interval, tz=UTC)
    states = [latest_state(gpu_id, roles[gpu_id], last, params["started"]) for gpu_id in roles]
    GPUState.objects.bulk_create(states, batch_size=500)
    for _ in range(20):  # a first run starts at the retention horizon and does a few hours at a time
        rollups.rollup_minutes(now)
    with connection.cursor() as cursor:
        # In production autovacuum summarizes each BRIN range on ts as it fills; a bulk load leaves them
        # all unsummarized (every time-range scan would read the whole day) until it gets round to them.
        cursor.execute("VACUUM (ANALYZE) monitoring_gpusample, monitoring_processsample, monitoring_gpuminute")
    return time.perf_counter() - begin


def latest_state(gpu_id: int, role: str, last: datetime, started: int):
    """The GPU's latest state as the ingest would have left it after the loaded hour."""
    from monitoring.storage.models import GPUState

    util = 0 if role in ("forgotten", "empty", "serving") else 92
    process = {
        "pid": 10000 + gpu_id,
        "user": f"os{gpu_id % USERS:02d}",
        "name": "python",
        "cmdline": "python train.py",
        "mem_used_mib": 59000,
        "sm_util": util,
        "started_at": started,
    }
    return GPUState(
        gpu_id=gpu_id,
        last_sample_at=last,
        ecc_volatile=0,
        util_gpu=util,
        temp_c=88 if role == "hot" else 60,
        clocks_event_reasons=32 if role == "hot" else 0,
        mem_used_mib=4 if role == "empty" else 60000,
        processes=[] if role == "empty" else [process],
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def naive_verdicts(now: datetime) -> set[str]:
    """The baseline: idle and health verdicts with queries per GPU and per process, as a first version would."""
    from django.db.models import Count, Max, Min

    from inventory.models import GPU, OsAccount
    from monitoring.alerts.policies import PolicyBook
    from monitoring.alerts.windows import ceil_minute, floor_minute
    from monitoring.storage.models import GPUMinute, GPUSample

    idle = set()
    book = PolicyBook()
    start = now - WINDOW
    m0, m1 = ceil_minute(start), floor_minute(now)
    for gpu in GPU.objects.select_related("node", "state"):
        GPUSample.objects.filter(gpu=gpu, ts__gte=now - timedelta(minutes=2), ts__lt=now).aggregate(
            Min("temp_c"), Max("temp_c"), Max("clocks_event_reasons")
        )
        for process in gpu.state.processes:
            account = OsAccount.objects.filter(username=process["user"]).select_related("user").first()
            project = account.user.projects.order_by("id").first() if account else None
            limits = book.for_project(project.id if project else None)
            if process["mem_used_mib"] < limits.min_memory_mib:
                continue
            rolled = GPUMinute.objects.filter(gpu=gpu, bucket__gte=m0, bucket__lt=m1).aggregate(
                peak=Max("util_gpu_max"), n=Count("bucket"), last=Max("bucket")
            )
            tail_from = rolled["last"] + timedelta(minutes=1) if rolled["last"] else m0
            head = GPUSample.objects.filter(gpu=gpu, ts__gte=start, ts__lt=m0).aggregate(peak=Max("util_gpu"))
            tail = GPUSample.objects.filter(gpu=gpu, ts__gte=tail_from, ts__lt=now).aggregate(peak=Max("util_gpu"))
            peaks = [p for p in (rolled["peak"], head["peak"], tail["peak"]) if p is not None]
            if peaks and max(peaks) < limits.max_util_pct and rolled["n"] >= (m1 - m0) / timedelta(minutes=1) - 2:
                idle.add(f"idle_process:{gpu.uuid}:{process['pid']}:{int(process['started_at'])}")
    return idle


def cpu_seconds() -> float:
    """CPU used so far by this process and its PostgreSQL backend (read from /proc: the bench's server is
    local; parallel workers are not counted). Unlike milliseconds, an evaluation's CPU hardly moves with load."""
    import os
    import time

    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        backend = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        backend = 0.0
    return time.process_time() + backend


BASELINE = f"""
import json, sys, time
from datetime import datetime, timedelta
import django
django.setup()
from django.conf import settings
from monitoring.alerts import engine
{inspect.getsource(cpu_seconds)}
settings.AGENT_INTERVAL_S = float(sys.argv[2])
now, times = datetime.fromisoformat(sys.argv[1]), []
for i in range(int(sys.argv[3])):
    began, cpu = time.perf_counter(), cpu_seconds()
    engine.evaluate(now + timedelta(milliseconds=100 * (i + 1)))
    times.append((time.perf_counter() - began, cpu_seconds() - cpu))
print(json.dumps(times))
"""


def baseline_evaluations(tree: str, now: datetime, interval: int, runs: int) -> list[tuple[float, float]]:
    """The earlier tree's engine.evaluate on this database: its first run (which opens its alerts) dropped."""
    env = {**os.environ, "PYTHONPATH": tree, "DJANGO_SETTINGS_MODULE": "fleet.settings"}
    argv = [sys.executable, "-c", BASELINE, now.isoformat(), str(interval), str(runs + 1)]
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])[1:]


def floor(queries: int, repeats: int) -> float:
    """A loop of `queries` trivial round trips to PostgreSQL: what any evaluation pays at the least."""
    from django.db import connection

    runs = []
    with connection.cursor() as cursor:
        for _ in range(repeats):
            began = time.perf_counter()
            for _ in range(queries):
                cursor.execute("SELECT 1")
                cursor.fetchone()
            runs.append(time.perf_counter() - began)
    return statistics.median(runs)


def timed(function, *args):
    began = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - began, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--interval", type=int, default=1, help="seconds between samples (agents default to 1)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline-tree", help="a checkout of an earlier commit whose evaluation to time as well")
    args = parser.parse_args()

    recreate_database()
    setup_django()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from monitoring.alerts import engine
    from monitoring.alerts.choices import AlertKind
    from monitoring.alerts.models import Alert
    from monitoring.alerts.rules.health import HealthRule
    from monitoring.alerts.rules.idle.rule import IdleProcessRule
    from monitoring.costs.rollup import rollup_usage

    settings.AGENT_INTERVAL_S = float(args.interval)
    now = datetime.now(UTC).replace(microsecond=0)
    roles = make_fleet(args.gpus)
    seconds = write_telemetry(roles, now, args.interval)
    samples = args.gpus * 3600 // args.interval
    print(
        f"fleet: {args.gpus} GPUs, {samples:,} GPU samples and as many process samples for the last hour "
        f"({seconds:.0f} s to write)"
    )

    def steady_round() -> list[tuple[float, float]]:
        runs = []
        for i in range(args.repeats):
            cpu = cpu_seconds()
            runs.append((timed(engine.evaluate, now + timedelta(milliseconds=100 * (i + 1)))[0], cpu_seconds() - cpu))
        return runs

    first, summary = timed(engine.evaluate, now)
    opened = Counter(Alert.objects.values_list("kind", flat=True))
    # This tree and the earlier one take turns (A B A B A), so a change of load hits both alike.
    steady, before = steady_round(), []
    for _ in range(2 if args.baseline_tree else 0):
        before += baseline_evaluations(args.baseline_tree, now, args.interval, args.repeats)
        steady += steady_round()

    def set_based():
        idle = IdleProcessRule().evaluate(now, [])
        HealthRule().evaluate(now, [])
        return {s.candidate.key for s in idle.sightings}, {f.key for f in idle.findings}

    rules = [timed(set_based)[0] for _ in range(args.repeats)]
    naive = [timed(naive_verdicts, now)[0] for _ in range(max(1, args.repeats // 2))]
    (idle_set, forgotten), naive_idle = set_based(), naive_verdicts(now)
    with CaptureQueriesContext(connection) as evaluate_queries:
        engine.evaluate(now + timedelta(milliseconds=50))
    with CaptureQueriesContext(connection) as rules_queries:
        set_based()
    with CaptureQueriesContext(connection) as naive_queries:
        naive_verdicts(now)
    floor_s = floor(len(evaluate_queries), args.repeats * 4)
    catch_up_s, _ = timed(rollup_usage, now - timedelta(seconds=60))
    usage_s, usage_rows = timed(rollup_usage, now + timedelta(seconds=5))

    print(
        f"first evaluation: {first * 1000:.0f} ms, opened {len(summary.opened)} alerts "
        f"({opened[AlertKind.IDLE_PROCESS]} idle, {opened[AlertKind.GPU_THROTTLING]} throttling, "
        f"{opened[AlertKind.GPU_TEMPERATURE]} temperature)"
    )
    walls, cpus = [w for w, _ in steady], [c for _, c in steady]
    p50, cpu50 = statistics.median(walls), statistics.median(cpus)
    print(
        f"steady evaluation (all rules, {len(steady)} runs): median {ms(p50)}, max {ms(max(walls))}, "
        f"{len(evaluate_queries)} queries; CPU (Python + its PostgreSQL backend) median {ms(cpu50)}"
    )
    if before:
        b_walls, b_cpus = [w for w, _ in before], [c for _, c in before]
        print(
            f"  {args.baseline_tree}'s evaluation, {len(before)} runs taking turns with these: median "
            f"{ms(statistics.median(b_walls))}, max {ms(max(b_walls))}, CPU median {ms(statistics.median(b_cpus))}; "
            f"ratio this / earlier {p50 / statistics.median(b_walls):.2f} (CPU {cpu50 / statistics.median(b_cpus):.2f})"
        )
    print(f"floor, {len(evaluate_queries)} x SELECT 1: median {ms(floor_s)}; evaluation / floor {p50 / floor_s:.1f}")
    rules_s, naive_s = statistics.median(rules), statistics.median(naive)
    print(f"idle + health verdicts, set-based: median {ms(rules_s)} in {len(rules_queries)} queries")
    print(
        f"idle + health verdicts, naive per-GPU baseline: median {ms(naive_s)} in {len(naive_queries)} queries "
        f"({naive_s / rules_s:.1f}x slower)"
    )
    print(
        f"both find the same {len(idle_set)} idle processes: {idle_set == naive_idle} "
        f"({len(forgotten)} forgotten and alerted, {len(idle_set - forgotten)} underused)"
    )
    print(f"usage rollup: first run over the hour {ms(catch_up_s)}; next minute {ms(usage_s)} ({usage_rows} hour rows)")


if __name__ == "__main__":
    main()
