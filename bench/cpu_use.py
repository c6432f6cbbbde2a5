"""CPU seconds that the benchmarks charge to the server under test and to PostgreSQL (user + system), and
the CPU a call costs in this process."""

import threading
import time
from collections.abc import Callable

import psutil
import psycopg


def user_and_system(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def cpu_seconds(process: psutil.Process) -> float:
    """User + system CPU of a process and its children (uvicorn --workers runs the app in children)."""
    total = 0.0
    for each in [process, *process.children(recursive=True)]:
        try:
            total += user_and_system(each)
        except psutil.NoSuchProcess:
            continue
    return total


def own_cpu() -> float:
    return user_and_system(psutil.Process())


def cpu_us_per_call(call: Callable[[], object], calls: int, repeats: int = 1) -> float:
    """This process's CPU µs per call(), the best of repeats runs of calls calls (time.process_time: waiting
    for a core on a shared machine is left out)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        for _ in range(calls):
            call()
        best = min(best, (time.process_time() - started) / calls * 1e6)
    return best


class DatabaseCPU:
    """CPU seconds of PostgreSQL over a window: this database's backends and the cluster's own processes.

    Polled every half second, because a backend can end inside the window (the server recycles its
    connection after DB_CONN_MAX_AGE) and take its CPU times with it; one that ends loses at most the
    last half second. The WAL writer, checkpointer and background writer count: they work for the load measured.
    """

    def __init__(self, period_s: float = 0.5):
        from django.db import connection

        db = connection.settings_dict
        self.params = {"host": db["HOST"] or None, "port": db["PORT"] or None, "user": db["USER"], "dbname": db["NAME"]}
        self.period_s = period_s
        self.before: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.started = threading.Event()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)

    def read(self, conn) -> dict[int, float]:
        query = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() OR datname IS NULL"
        found = {}
        for (pid,) in conn.execute(query):
            try:
                found[pid] = user_and_system(psutil.Process(pid))
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return found

    def poll(self) -> None:
        with psycopg.connect(**self.params, autocommit=True) as conn:
            self.before = self.read(conn)
            self.last = dict(self.before)
            self.started.set()
            while not self.stopping.wait(self.period_s):
                self.last.update(self.read(conn))
            self.last.update(self.read(conn))

    def start(self) -> None:
        self.thread.start()
        self.started.wait(10)

    def stop(self) -> float:
        """CPU seconds since start (a backend that started meanwhile counts from 0)."""
        self.stopping.set()
        self.thread.join()
        return sum(cpu - self.before.get(pid, 0.0) for pid, cpu in self.last.items())
