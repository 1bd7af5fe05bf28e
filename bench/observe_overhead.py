"""What a worker's metrics and log cost: the drain benchmark with and without them.

    python bench/observe_overhead.py --dsn postgresql://postgres@127.0.0.1:55432/awa_bench \
        [--n 30000] [--reps 7] [--conc 100]

Each measurement is a fresh process on the same database: empty the tables, insert ``n``
no-op jobs (in calls of 1,000), start one worker at ``conc`` and time until the store has
accepted every completion (the runtime's own count, so that no polling query competes with
the drain; the database's count is checked once at the end). Two modes, alternated rep by
rep so that a noisy neighbour hurts both:

* ``plain``: no metrics, the log at WARNING (nothing but problems is written);
* ``observed``: what ``awa worker --metrics-port P --log-level info`` runs: the
  ``awa.metrics.Metrics`` observer on the OpenTelemetry SDK with the Prometheus exporter
  serving ``/metrics`` (scraped every second during the drain, harsher than Prometheus's
  default 15 s), and the log configured at INFO (text, to a file).

Prints one JSON line per measurement, then the medians and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psycopg

import awa
from awa.adapters.postgres import migrate

MODES = ("plain", "observed")


@dataclass
class Noop:
    seq: int


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape_every_second(port: int, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            answer.read()


async def _measure(dsn: str, mode: str, n: int, conc: int) -> dict[str, object]:
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("TRUNCATE awa.jobs, awa.dlq, awa.queues RESTART IDENTITY")
    client = awa.AsyncClient(dsn)

    @client.task(Noop, queue="drain")
    async def noop(job: awa.Job[Noop]) -> None:
        return None

    for start in range(0, n, 1000):
        await client.insert_many([Noop(i) for i in range(start, min(start + 1000, n))])
    observers = []
    stop_scraping = threading.Event()
    stop_metrics = None
    if mode == "observed":
        from awa.metrics import Metrics
        from awa.worker import configure_logging
        from awa.worker.prometheus import serve_metrics

        log = open(Path(tempfile.mkdtemp(prefix="awa-bench-")) / "worker.log", "w")  # noqa: SIM115
        configure_logging("info", "text", log)
        port = _free_port()
        provider, stop_metrics = serve_metrics("127.0.0.1", port)
        observers.append(Metrics(provider))
        threading.Thread(
            target=_scrape_every_second, args=(port, stop_scraping), daemon=True
        ).start()
    started, cpu_started = time.perf_counter(), time.process_time()
    await client.start([("drain", conc)], observers=observers)
    runtime = client.runtime
    assert runtime is not None
    while runtime.stats.finished < n:  # outcomes the store accepted; no query meanwhile
        await asyncio.sleep(0.005)
    elapsed_s = time.perf_counter() - started
    cpu_s = time.process_time() - cpu_started
    with psycopg.connect(dsn, autocommit=True) as admin:  # and the database agrees
        row = admin.execute("SELECT count(*) FROM awa.jobs WHERE state = 'completed'").fetchone()
        assert row is not None
        assert row[0] == n, row
    stop_scraping.set()
    await client.close()
    if stop_metrics is not None:
        stop_metrics()
    return {
        "mode": mode,
        "n": n,
        "conc": conc,
        "s": round(elapsed_s, 3),
        "jobs_per_s": n / elapsed_s,
        "cpu_us_per_job": cpu_s / n * 1e6,  # the worker process's CPU, every thread
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--n", type=int, default=30_000)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--conc", type=int, default=100)
    parser.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args()
    if args.one:
        result = asyncio.run(_measure(args.dsn, args.one, args.n, args.conc))
        print(json.dumps(result), flush=True)
        return
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        migrate(conn)
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    warm_up = [sys.executable, __file__, "--dsn", args.dsn, "--n", str(args.n), "--one", "plain"]
    subprocess.run(warm_up, capture_output=True, check=True)  # the first run after a big
    # truncate pays for the table's stale statistics: not measured
    for rep in range(args.reps):
        for mode in MODES if rep % 2 == 0 else tuple(reversed(MODES)):
            child = [sys.executable, __file__, "--dsn", args.dsn, "--n", str(args.n)]
            child += ["--conc", str(args.conc), "--one", mode]
            done = subprocess.run(child, capture_output=True, text=True, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            rates[mode].append(result["jobs_per_s"])
            cpu[mode].append(result["cpu_us_per_job"])
            print(json.dumps({"rep": rep, **result}), flush=True)
    plain, observed = (statistics.median(rates[mode]) for mode in MODES)
    plain_cpu, observed_cpu = (statistics.median(cpu[mode]) for mode in MODES)
    print(
        json.dumps(
            {
                "median_plain_jobs_per_s": round(plain),
                "median_observed_jobs_per_s": round(observed),
                "observed_over_plain": round(observed / plain, 3),
                "overhead_pct": round((1 - observed / plain) * 100, 1),
                "median_cpu_us_per_job": [round(plain_cpu, 1), round(observed_cpu, 1)],
                "cpu_overhead_pct": round((observed_cpu / plain_cpu - 1) * 100, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
