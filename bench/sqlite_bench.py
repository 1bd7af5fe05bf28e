"""The SQLite store through the whole library, and the same workload on PostgreSQL as a
reference: insert one by one and in bulk, drain with one and with four worker processes,
pickup latency (insert -> handler start) to an idle worker process, and the CPU an idle
worker process uses.

    python bench/sqlite_bench.py                                  # a SQLite file in /tmp
    python bench/sqlite_bench.py --url sqlite:////var/tmp/b.db    # a SQLite file of yours
    python bench/sqlite_bench.py --url postgresql://user@host:port/db

The store is emptied before each measurement (the SQLite file deleted, the PostgreSQL tables
truncated): never point this at jobs you want to keep. Each drain and the pickup run in fresh
worker processes (``awa.AsyncClient(URL)``, ``client.start([(queue, 100)])``), timed from the
moment the queue is resumed with every worker ready until the store counts every job
completed. One line of JSON per measurement on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import awa
from awa.adapters.sqlite import sqlite_path

QUEUE = "bench"
BULK_CHUNK = 1000
CONCURRENCY = 100
PICKUPS = 200
PICKUP_SPACING_S = 0.02


@dataclass
class BenchArgs:
    seq: int
    ts: float


def reset(url: str) -> None:
    """An empty store at ``url``."""
    if url.lower().startswith("sqlite:"):
        path = sqlite_path(url)
        for suffix in ("", "-wal", "-shm"):
            Path(path + suffix).unlink(missing_ok=True)
        return
    import psycopg

    client = awa.Client(url)
    client.migrate()
    client.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("TRUNCATE awa.jobs, awa.dlq, awa.queues, awa.schedules, awa.workers")


def report(url: str, what: str, **figures: float) -> None:
    store = "sqlite" if url.lower().startswith("sqlite:") else "postgresql"
    print(json.dumps({"store": store, "measure": what, **figures}), flush=True)


async def insert_one_by_one(url: str, n: int) -> float:
    reset(url)
    client = awa.AsyncClient(url)
    await client.migrate()
    started = time.perf_counter()
    for seq in range(n):
        await client.insert(BenchArgs(seq, 0.0), queue=QUEUE)
    elapsed = time.perf_counter() - started
    await client.close()
    return n / elapsed


async def insert_bulk(url: str, n: int, *, paused: bool = False) -> float:
    reset(url)
    client = awa.AsyncClient(url)
    await client.migrate()
    if paused:
        await client.pause_queue(QUEUE)
    started = time.perf_counter()
    for first in range(0, n, BULK_CHUNK):
        specs = [
            awa.InsertSpec(args=BenchArgs(seq, 0.0), queue=QUEUE)
            for seq in range(first, min(n, first + BULK_CHUNK))
        ]
        await client.insert_many(specs)
    elapsed = time.perf_counter() - started
    await client.close()
    return n / elapsed


def _workers(url: str, count: int, mode: str, out: Path) -> list[subprocess.Popen[bytes]]:
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "worker", url, mode, str(out / f"{number}.txt")],
            stdout=subprocess.PIPE,
        )
        for number in range(count)
    ]
    for proc in procs:  # each prints one line once its worker is running
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
    return procs


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout=60)


async def drain(url: str, n: int, processes: int) -> float:
    await insert_bulk(url, n, paused=True)
    client = awa.AsyncClient(url)
    with tempfile.TemporaryDirectory() as out:
        procs = _workers(url, processes, "noop", Path(out))
        started = time.perf_counter()
        await client.resume_queue(QUEUE)
        while await client.count_jobs(queue=QUEUE, state="completed") < n:
            await asyncio.sleep(0.01)
        elapsed = time.perf_counter() - started
        _stop(procs)
    await client.close()
    return n / elapsed


async def pickup(url: str) -> dict[str, float]:
    reset(url)
    client = awa.AsyncClient(url)
    await client.migrate()
    with tempfile.TemporaryDirectory() as out:
        procs = _workers(url, 1, "latency", Path(out))
        for seq in range(PICKUPS):
            await client.insert(BenchArgs(seq, time.time()), queue=QUEUE)
            await asyncio.sleep(PICKUP_SPACING_S)
        while await client.count_jobs(queue=QUEUE, state="completed") < PICKUPS:
            await asyncio.sleep(0.01)
        _stop(procs)
        latencies = sorted(float(x) for x in (Path(out) / "0.txt").read_text().split())
    await client.close()
    q = statistics.quantiles(latencies, n=100)
    return {"p50_ms": q[49] * 1000, "p95_ms": q[94] * 1000, "p99_ms": q[98] * 1000}


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds a process used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def idle_cpu(url: str, seconds: float = 10.0) -> float:
    """Percent of one core an idle worker process uses, waiting for work that never comes."""
    reset(url)
    client = awa.AsyncClient(url)
    await client.migrate()
    await client.close()
    with tempfile.TemporaryDirectory() as out:
        [proc] = _workers(url, 1, "noop", Path(out))
        await asyncio.sleep(2)  # past start-up
        before = _cpu_s(proc.pid)
        await asyncio.sleep(seconds)
        used = _cpu_s(proc.pid) - before
        _stop([proc])
    return 100 * used / seconds


def worker(url: str, mode: str, out: str) -> None:
    """A worker process: ``noop`` handlers, or ``latency`` ones that note insert -> start."""

    async def run() -> None:
        client = awa.AsyncClient(url)
        log = open(out, "a", buffering=1)  # noqa: SIM115 - for the process's life

        @client.task(BenchArgs, queue=QUEUE)
        async def handle(job: awa.Job[BenchArgs]) -> None:
            if mode == "latency":
                log.write(f"{time.time() - job.args.ts}\n")

        await client.start([(QUEUE, CONCURRENCY)])
        print("ready", flush=True)
        await asyncio.Event().wait()  # until SIGTERM ends the process

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    asyncio.run(run())


async def main(url: str, jobs: int, reps: int) -> None:
    for _ in range(reps):
        report(url, "insert_one_by_one", jobs_per_s=await insert_one_by_one(url, jobs // 10))
        report(url, "insert_bulk", jobs_per_s=await insert_bulk(url, jobs))
        report(url, "drain_1_process", jobs_per_s=await drain(url, jobs, 1))
        report(url, "drain_4_processes", jobs_per_s=await drain(url, jobs, 4))
        report(url, "pickup", **await pickup(url))
        report(url, "idle_worker", cpu_percent=await idle_cpu(url))


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker(*sys.argv[2:5])
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=f"sqlite:///{tempfile.gettempdir()}/awa-bench.db")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=1)
    options = parser.parse_args()
    asyncio.run(main(options.url, options.jobs, options.reps))
