"""Reservations benchmark: booking latency under 32 concurrent bookers, and the timeline page for 64 GPUs × 4 weeks.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/fleet REDIS_URL=redis://127.0.0.1:6379/0 SECRET_KEY=bench \
        python bench/reservations.py [--bookers 32] [--bookings 25] [--pages 40] [--only one-slot closed-loop ...]

It creates a scratch database `<name>_bench` beside the one in DATABASE_URL, migrates it, measures, and drops it.
Each booker is its own process with its own connection. Baselines come from the same run: one booker alone,
and the timeline page with no bookings.

Two models of "32 concurrent bookers": bursts (all 32 send a booking at the same moment, wait for the
slowest, and again: the worst instant) and a closed loop (each books again as soon as its last booking
returns, so 32 are always in flight: the machine saturated). Bookers are warm (one untimed booking
first) except in the line marked cold, where each process's first booking is timed too.

The api lines time what a researcher's client sees: each booker POSTs to /api/reservations/ (token
auth, validation, the booking, the JSON reply) over its own keep-alive HTTP connection to uvicorn
with the README's two workers, started on the scratch database; a booking is timed from sending the
request to reading the whole reply. Their floor, in the same run and sent the same way 32 at once, is
a request that does nothing (bench/floor_urls.py): an empty page, and an empty API call behind the
API's token check. No booking through this web server on this machine can be faster than those.
"""

import argparse
import multiprocessing as mp
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psutil
from cpu_use import DatabaseCPU, cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
GPUS = 64
SCENARIOS = ["bursts", "cold", "one-slot", "closed-loop", "api", "timeline"]
API_WORKERS = 2  # as the README runs the web server: uvicorn --workers 2
# Requests that do nothing, served beside the app by the API lines' web server (bench/floor_urls.py).
FLOORS = {"empty page": "/bench/empty-page", "empty API call": "/bench/empty-api-call"}


def scratch_database() -> tuple[str, str]:
    url = os.environ["DATABASE_URL"]
    parts = urlsplit(url)
    name = parts.path.lstrip("/") + "_bench"
    return urlunsplit(parts._replace(path="/" + name)), name


def admin_sql(statement: str) -> None:
    import psycopg

    parts = urlsplit(os.environ["DATABASE_URL"])
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(statement)


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.settings")
    import django

    django.setup()


def make_fleet() -> list[int]:
    from django.contrib.auth import get_user_model

    from inventory.models import GPU, GPUModel, Node

    model = GPUModel.objects.get(name="A100 80GB")
    ids = []
    for n in range(GPUS // 8):
        node = Node.objects.create(hostname=f"bench-{n:02}", status="online")
        for index in range(8):
            ids.append(GPU.objects.create(node=node, index=index, uuid=f"GPU-bench-{n}-{index}", model=model).pk)
    User = get_user_model()
    for i in range(64):
        User.objects.create_user(f"booker{i:02}", f"booker{i}@example.org")
    return ids


def booker(i: int, gpu_id: int, count: int, contended: bool, warm: bool, barrier, rounds, done, results) -> None:
    """Book `count` one-hour slots, timing each call: back to back, or in bursts when `rounds` syncs them.

    A warm booker has made one booking before (as a web worker that has served one has): its first
    timed booking pays no first-use costs (the rules' cache, code paths run once per process).
    """
    setup_django()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from inventory.models import GPU
    from reservations.booking import BookingError, BookingRequest, book

    user = get_user_model().objects.get(username=f"booker{i:02}")
    gpu = GPU.objects.get(pk=gpu_id)
    base = timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(days=1)
    connection.ensure_connection()
    backend = psutil.Process(connection.connection.info.backend_pid)  # its PostgreSQL backend, on this machine
    statements = []
    connection.execute_wrappers.append(lambda execute, *args: statements.append(1) or execute(*args))

    def refused(start) -> bool:
        try:
            book(BookingRequest(user=user, gpus=[gpu], start=start, end=start + timedelta(hours=1)))
        except BookingError:
            return True
        return False

    if warm:
        refused(base + timedelta(days=30, hours=i))
        statements.clear()
    barrier.wait()
    cpu = time.process_time(), cpu_seconds(backend)
    timings, refusals = timed_bookings(base, count, contended, rounds, refused)
    cpu = Cost(time.process_time() - cpu[0], cpu_seconds(backend) - cpu[1], len(statements))
    done.wait()  # no booker exits (which costs CPU) while others still book
    results.put((timings, refusals, cpu))


def timed_bookings(base, count: int, contended: bool, rounds, refused) -> tuple[list[float], int]:
    """Time `count` calls of `refused(start)` for one-hour slots from `base` (four slots in turn when
    `contended`), each sent with every other booker's when `rounds` syncs them; and count the refusals."""
    timings, refusals = [], 0
    for n in range(count):
        start = base + timedelta(hours=n if not contended else n % 4)
        if rounds is not None:
            rounds.wait()  # every booker sends this booking at the same moment
        began = time.perf_counter()
        refusals += refused(start)
        timings.append(time.perf_counter() - began)
    return timings, refusals


@dataclass
class Cost:
    """CPU seconds spent by bookers (Python) and their PostgreSQL backends, and cursor executes (each one
    round trip; BEGIN and COMMIT, sent by psycopg itself, are not counted). Through the API, `python` is
    the bookers' own HTTP clients, `server` the web server's processes and `backend` PostgreSQL's
    (the database's backends and the cluster's own processes), and `statements` counts requests."""

    python: float = 0.0
    backend: float = 0.0
    statements: int = 0
    server: float = 0.0

    def add(self, other: "Cost") -> None:
        self.python, self.backend = self.python + other.python, self.backend + other.backend
        self.statements += other.statements


def api_booker(i: int, gpu_id: int, count: int, contended: bool, api: tuple, barrier, rounds, done, results) -> None:
    """As `booker`, through the HTTP API: `api` is (port, token of this booker, a path to GET instead of
    booking, or None). CPU is the client's alone."""
    import http.client
    import json
    from datetime import UTC, datetime

    port, token, floor = api
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port)
    base = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(days=1)

    def refused(start: datetime) -> bool:
        if floor:
            conn.request("GET", floor, headers=headers)
        else:
            body = {"gpus": [gpu_id], "start": start.isoformat(), "end": (start + timedelta(hours=1)).isoformat()}
            conn.request("POST", "/api/reservations/", json.dumps(body), headers)
        response = conn.getresponse()
        response.read()
        if response.status not in ((200,) if floor else (201, 400)):
            raise RuntimeError(f"{floor or 'booking'} answered {response.status}")
        return response.status == 400

    refused(base + timedelta(days=30, hours=i))  # warm: the connection is open and the worker has served one
    barrier.wait()
    cpu = time.process_time()
    timings, refusals = timed_bookings(base, count, contended, rounds, refused)
    cpu = Cost(time.process_time() - cpu, 0.0, count)  # the server's and PostgreSQL's: see ServerCPU
    done.wait()
    conn.close()
    results.put((timings, refusals, cpu))


def run_bookers(
    gpu_ids: list[int],
    bookers: int,
    count: int,
    contended: bool,
    burst: bool = False,
    warm: bool = True,
    api: "ApiServer | None" = None,
    floor: str | None = None,
) -> tuple[list[float], int, float, Cost]:
    from reservations.models import Reservation

    Reservation.objects.all().delete()
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(bookers + 1), ctx.Queue()
    rounds = ctx.Barrier(bookers) if burst else None
    done = ctx.Barrier(bookers)
    targets = [gpu_ids[0] if contended else gpu_ids[i % len(gpu_ids)] for i in range(bookers)]
    # The last argument before the barriers: warm or not, or the API's port, this booker's token and `floor`.
    own = [warm] * bookers if api is None else [(api.port, token, floor) for token in api.tokens]
    target = booker if api is None else api_booker
    procs = [
        ctx.Process(target=target, args=(i, targets[i], count, contended, own[i], barrier, rounds, done, results))
        for i in range(bookers)
    ]
    for proc in procs:
        proc.start()
    barrier.wait()
    began = time.perf_counter()
    server = api.measure() if api is not None else None
    timings, refused, cost = [], 0, Cost()
    for _ in procs:
        got, no, spent = results.get(timeout=600)
        timings += got
        refused += no
        cost.add(spent)
    wall = time.perf_counter() - began
    if server is not None:
        cost.server, cost.backend = server.stop()
    for proc in procs:
        proc.join()
    return timings, refused, wall, cost


class ApiServer:
    """uvicorn serving the app, with bench/floor_urls.py's two empty requests beside it, on the scratch
    database; and an API token for each booker."""

    def __init__(self, workers: int) -> None:
        import subprocess

        from django.contrib.auth import get_user_model

        from accounts.tokens import issue
        from fleet import serving
        from fleet.demo.processes import wait_for_login_page
        from fleet.embedded import free_port

        self.tokens = [
            issue(user, "reservations benchmark")[1]
            for user in get_user_model().objects.filter(username__startswith="booker").order_by("username")
        ]
        self.port = free_port()
        argv = serving.local_command(self.port, "--workers", str(workers), "--log-level", "warning")
        env = {
            **os.environ,
            "ALLOWED_HOSTS": "127.0.0.1",
            "DJANGO_SETTINGS_MODULE": "floor_settings",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "bench"), str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        self.process = subprocess.Popen(argv, cwd=ROOT, env=env)
        if not wait_for_login_page(f"http://127.0.0.1:{self.port}/login/", stopping=[]):
            self.stop()
            raise RuntimeError("the web server did not answer within 60 s")

    def measure(self) -> "ServerCPU":
        return ServerCPU(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


class ServerCPU:
    """CPU seconds of the web server's processes and of PostgreSQL from now until `stop()`."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.before = cpu_seconds(self.process)
        self.database = DatabaseCPU()
        self.database.start()

    def stop(self) -> tuple[float, float]:
        return cpu_seconds(self.process) - self.before, self.database.stop()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def fill_four_weeks(gpu_ids: list[int]) -> int:
    """Bookings of 2–12 hours with gaps of 0–10 hours on every GPU over the four weeks shown."""
    import uuid

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from inventory.models import Project
    from reservations.models import Reservation

    rng = random.Random(7)
    users = list(get_user_model().objects.all()[:16])
    project = Project.objects.create(name="bench")
    start_of_day = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    end = start_of_day + timedelta(days=28)
    rows = []
    for gpu_id in gpu_ids:
        moment = start_of_day - timedelta(hours=rng.randint(0, 10))
        while moment < end:
            length = timedelta(hours=rng.randint(2, 12))
            rows.append(
                Reservation(
                    booking=uuid.uuid4(),
                    user=rng.choice(users),
                    project=project if rng.random() < 0.5 else None,
                    gpu_id=gpu_id,
                    start=moment,
                    end=moment + length,
                    purpose="bench",
                )
            )
            moment += length + timedelta(hours=rng.randint(0, 10))
    Reservation.objects.all().delete()
    Reservation.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


def time_timeline(pages: int) -> list[float]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="booker00"))
    client.get("/reservations/?days=28")  # warm
    timings = []
    for _ in range(pages):
        began = time.perf_counter()
        response = client.get("/reservations/?days=28")
        timings.append(time.perf_counter() - began)
        assert response.status_code == 200
    return timings


def report_latency(
    label: str, timings: list[float], refused: int, wall: float, cost: Cost, unit: str = "booking"
) -> None:
    n = len(timings)
    print(
        f"{label:<34} n={n:<5} refused={refused:<5} p50={ms(percentile(timings, 50)):<9} "
        f"p99={ms(percentile(timings, 99)):<9} max={ms(max(timings)):<9} {n / wall:.0f} {unit}s/s; "
        f"CPU per {unit}: {cpu_per_booking(cost, n)}"
    )


def cpu_per_booking(cost: Cost, n: int) -> str:
    if cost.server:
        return f"clients {ms(cost.python / n)} + web server {ms(cost.server / n)} + PostgreSQL {ms(cost.backend / n)}"
    return f"Python {ms(cost.python / n)} + PostgreSQL {ms(cost.backend / n)}, {cost.statements / n:.1f} executes"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bookers", type=int, default=32)
    parser.add_argument("--bookings", type=int, default=25, help="bookings per booker")
    parser.add_argument("--pages", type=int, default=40, help="timeline requests to time")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=SCENARIOS,
        default=SCENARIOS,
        help="scenarios to run (the 1-booker baseline always runs)",
    )
    args = parser.parse_args()

    url, name = scratch_database()
    admin_sql(f'DROP DATABASE IF EXISTS "{name}"')
    admin_sql(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    try:
        setup_django()
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", verbosity=0)
        gpu_ids = make_fleet()
        print(f"Booking latency (each booking: quota check, conflict check, insert, commit; {os.cpu_count()} cores)")
        single = run_bookers(gpu_ids, 1, args.bookings * 4, contended=False)
        report_latency("1 booker (baseline)", *single)
        per_booking = (single[3].python + single[3].backend) / len(single[0])
        print(
            f"CPU floor for the last of {args.bookers} simultaneous bookings on {os.cpu_count()} cores: "
            f"{args.bookers} × {ms(per_booking)} / {os.cpu_count()} = {ms(args.bookers * per_booking / os.cpu_count())}"
        )
        if "bursts" in args.only:
            burst = run_bookers(gpu_ids, args.bookers, args.bookings, contended=False, burst=True)
            report_latency(f"{args.bookers} at once, own GPUs (bursts)", *burst)
            ratio = percentile(burst[0], 99) / percentile(single[0], 99)
            print(f"p99 ratio, {args.bookers} at once / 1 booker: {ratio:.1f}×")
        if "cold" in args.only:
            cold = run_bookers(gpu_ids, args.bookers, args.bookings, contended=False, burst=True, warm=False)
            report_latency(f"{args.bookers} at once, own GPUs (bursts, cold)", *cold)
        if "one-slot" in args.only:
            fight = run_bookers(gpu_ids, args.bookers, args.bookings, contended=True, burst=True)
            report_latency(f"{args.bookers} at once, one GPU (bursts)", *fight)
        if "closed-loop" in args.only:
            many = run_bookers(gpu_ids, args.bookers, args.bookings, contended=False)
            report_latency(f"{args.bookers} closed loop, own GPUs", *many)
        if "api" in args.only:
            from django.conf import settings

            print(f"\nThrough the HTTP API (uvicorn, {API_WORKERS} workers of {settings.WEB_THREADS} request threads)")
            server = ApiServer(API_WORKERS)
            try:
                alone = run_bookers(gpu_ids, 1, args.bookings * 4, False, api=server)
                report_latency("API, 1 booker (baseline)", *alone)
                floors = {}
                for label, path in FLOORS.items():
                    floors[label] = run_bookers(
                        gpu_ids, args.bookers, args.bookings, False, burst=True, api=server, floor=path
                    )
                    report_latency(f"{args.bookers} at once, {label} (floor)", *floors[label], unit="request")
                bursts = run_bookers(gpu_ids, args.bookers, args.bookings, False, burst=True, api=server)
                report_latency(f"API, {args.bookers} at once (bursts)", *bursts)
                ratio = percentile(bursts[0], 99) / percentile(floors["empty API call"][0], 99)
                print(f"p99 ratio, {args.bookers} bookings / {args.bookers} empty API calls at once: {ratio:.1f}×")
                report_latency(
                    f"API, {args.bookers} closed loop",
                    *run_bookers(gpu_ids, args.bookers, args.bookings, False, api=server),
                )
            finally:
                server.stop()
        if "timeline" not in args.only:
            connections.close_all()
            return 0

        from reservations.models import Reservation

        Reservation.objects.all().delete()
        empty = time_timeline(args.pages)
        bars = fill_four_weeks(gpu_ids)
        full = time_timeline(args.pages)
        print(f"\nTimeline page, {GPUS} GPUs × 28 days, server time through the Django test client")
        print(f"{'no bookings (baseline)':<34} p50={ms(percentile(empty, 50)):<9} p99={ms(percentile(empty, 99))}")
        print(f"{f'{bars} bookings':<34} p50={ms(percentile(full, 50)):<9} p99={ms(percentile(full, 99))}")
        print(f"p50 ratio, full / empty: {statistics.median(full) / statistics.median(empty):.1f}×")
        connections.close_all()
    finally:
        admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return 0


if __name__ == "__main__":
    sys.exit(main())
