"""The dashboard's pages at a million jobs: server time per page, and what the maintenance
leader's count (the queue summary) costs, on a real PostgreSQL.

    python bench/ui_bench.py postgresql://user@host:port/dbname [--jobs 1000000] [--reps 50]

The database is migrated if needed and the awa tables are emptied, then filled with ``--jobs``
jobs over 5 queues and 7 kinds (70% completed, 20% available, 10% scheduled, plus 1,000 failed
and 1,000 dead letters) in one INSERT ... SELECT. Do not point this at a database whose jobs
you want to keep.

Each page is requested ``--reps`` times through the app in process (Starlette's test client),
so the time is the server's: reading the store, rendering the template. The queue page reads
the one summary row; for comparison the script also times ``queue_stats()``, the count of the
job table that the page would otherwise make on every view, and shows both plans.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import psycopg

from awa.adapters.postgres import PostgresStore, migrate
from awa.adapters.postgres._sql import SQL

FILL = """
INSERT INTO awa.jobs (kind, queue, args, state, run_at, created_at, finalized_at, attempt, errors)
SELECT 'kind_' || (g %% 7), 'queue_' || (g %% 5), jsonb_build_object('n', g, 'to', 'u@x.org'),
       CASE WHEN g %% 10 < 7 THEN 'completed' WHEN g %% 10 < 9 THEN 'available'
            ELSE 'scheduled' END,
       CASE WHEN g %% 10 = 9 THEN now() + interval '1 hour' ELSE now() - interval '1 hour' END,
       now() - interval '2 hours',
       CASE WHEN g %% 10 < 7 THEN now() - (g %% 3600) * interval '1 second' END,
       CASE WHEN g %% 10 < 7 THEN 1 ELSE 0 END, '[]'
FROM generate_series(1, %(jobs)s) AS g
"""
FAILED = """
INSERT INTO awa.jobs (kind, queue, state, run_at, created_at, finalized_at, attempt, errors)
SELECT 'kind_' || (g % 7), 'queue_' || (g % 5), 'failed', now(), now(), now(), 1,
       jsonb_build_array(jsonb_build_object('error', 'ValueError: bad input', 'attempt', 1,
                                            'at', now(), 'terminal', true))
FROM generate_series(1, 1000) AS g
"""
DEAD = """
INSERT INTO awa.dlq (id, kind, queue, state, run_at, created_at, finalized_at, attempt,
                     dlq_reason, dlq_at)
SELECT %(start)s + g, 'kind_' || (g %% 7), 'queue_' || (g %% 5), 'failed', now(), now(), now(), 3,
       CASE WHEN g %% 2 = 0 THEN 'heartbeat_stale' ELSE 'max_attempts_exhausted' END, now()
FROM generate_series(1, 1000) AS g
"""


def fill(url: str, jobs: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        conn.execute(
            "TRUNCATE awa.jobs, awa.dlq, awa.queues, awa.leader, awa.queue_summary RESTART IDENTITY"
        )
        started = time.perf_counter()
        conn.execute(FILL, {"jobs": jobs})
        conn.execute(FAILED)
        conn.execute(DEAD, {"start": jobs + 10_000})
        conn.execute("VACUUM ANALYZE awa.jobs")
        conn.execute("VACUUM ANALYZE awa.dlq")
        print(f"filled {jobs:,} jobs in {time.perf_counter() - started:.1f} s")


def timed(label: str, reps: int, call: Callable[[], Any]) -> dict[str, float]:
    call()  # warm: connections, prepared plans, templates
    samples = []
    for _ in range(reps):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    row = {
        "p50": statistics.median(samples),
        "p95": samples[max(int(len(samples) * 0.95) - 1, 0)],
        "max": samples[-1],
    }
    print(f"| {label} | {row['p50']:.1f} | {row['p95']:.1f} | {row['max']:.1f} |")
    return row


def plan(url: str, statement: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + statement).fetchall()
    for (line,) in rows:
        print("    " + line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    from awa.ui import create_app

    fill(args.url, args.jobs)
    store = PostgresStore(args.url)
    try:
        client = TestClient(create_app(store), base_url="http://127.0.0.1", client=("127.0.0.1", 1))

        def page(path: str) -> Callable[[], None]:
            def get() -> None:
                response = client.get(path)
                assert response.status_code == 200, (path, response.status_code)

            return get

        print("\n| what (ms) | p50 | p95 | max |\n| --- | --- | --- | --- |")
        timed("summarize_queues() (the leader, once per interval)", max(args.reps // 10, 3),
              store.summarize_queues)  # fmt: skip
        timed("GET / (the queues page)", args.reps, page("/"))
        timed("GET /dlq", args.reps, page("/dlq"))
        timed("GET /jobs (newest 50)", args.reps, page("/jobs"))
        timed("GET /jobs?queue=queue_3&state=available", args.reps,
              page("/jobs?queue=queue_3&state=available"))  # fmt: skip
        timed("GET /jobs?state=cancelled (matches none: scans every id)", max(args.reps // 10, 3),
              page("/jobs?state=cancelled"))  # fmt: skip
        timed("GET /jobs/1", args.reps, page("/jobs/1"))
        timed("queue_stats() (a count per view, for comparison)", max(args.reps // 10, 3),
              store.queue_stats)  # fmt: skip
        print("\nthe queue page's read (queue_summary.sql):")
        plan(args.url, SQL["queue_summary"])
    finally:
        store.close()


if __name__ == "__main__":
    main()
