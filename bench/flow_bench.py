"""Flow control's cost and accuracy across worker processes, on one PostgreSQL cluster.

    python bench/flow_bench.py throughput [--procs 4] [--conc 10] [--n 20000] [--reps 3]
    python bench/flow_bench.py rate [--procs 4] [--per-second 200] [--burst 20] [--seconds 60]
    python bench/flow_bench.py plans [--n 1000000] [--limit 10]
    python bench/flow_bench.py claims [--claims 300]

``throughput``: ``--n`` no-op jobs drained by ``--procs`` worker processes of ``--conc`` slots
each, under three settings that take turns within each rep: no limit; ``concurrency_limit``
equal to the fleet's slots (``procs * conc``); and the jobs spread over 1,000
``concurrency_key`` values with ``key_concurrency_limit=1``. Each measurement inserts the jobs
into a freshly emptied schema, starts the processes, and times from the moment they are told
to go until every job completed (polled in the database every 20 ms). Prints one JSON line
per measurement, then the medians and each limited setting's ratio to the unlimited one.

``rate``: ``rate_limit=(per_second, burst)`` on a queue with more jobs than the run can start,
drained by ``--procs`` processes for ``--seconds``; then every attempt's start
(``attempted_at``, the database's clock) is read back. Prints the rate held over the run (from
the first start, skipping the first second's burst) against the limit, and the most starts in
any window of one second against the bound ``burst + per_second``.

``plans``: ``--n`` runnable jobs in a queue without keys and as many in one with 1,000
``concurrency_key`` values, a tenth of each with an ``ordering_key`` (997 of them), written by
SQL and analyzed; then the claim statements' ``EXPLAIN (ANALYZE, BUFFERS)``, each in a
transaction rolled back, and their sequential scans counted.

``claims``: one process's claims of 1 and of 10 jobs, each followed by their finish, under no
limit, a ``concurrency_limit``, a ``rate_limit`` (neither reached) and ``key_concurrency_limit=1``
over 1,000 keys: the median and 90th percentile of the claims alone.

The cluster is the peers' (``PEERBENCH_DSN``, default ``postgresql://postgres@127.0.0.1:55432``);
the database ``flow_bench`` is dropped and made again. Figures, not assertions: the machine is
shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from bisect import bisect_left
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

BASE_DSN = os.environ.get("PEERBENCH_DSN", "postgresql://postgres@127.0.0.1:55432")
DATABASE = "flow_bench"
DSN = f"{BASE_DSN}/{DATABASE}"
QUEUE = "flow"
KEYS = 1000
HERE = Path(__file__).resolve()


# -- the worker process ---------------------------------------------------------------------------
async def _child(conc: int) -> None:
    import awa

    client = awa.AsyncClient(DSN)

    async def handle(job: awa.Job[dict[str, Any]]) -> None:
        return None

    client.task(dict, queue=QUEUE, kind="noop")(handle)
    print("READY", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # "go"
    await client.start([(QUEUE, conc)])
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # closed: stop
    await client.shutdown(timeout=30)
    await client.close()


class Fleet:
    """``procs`` worker processes, started and connected, waiting for ``go``."""

    def __init__(self, procs: int, conc: int) -> None:
        self.children = [
            subprocess.Popen(
                [sys.executable, str(HERE), "child", "--conc", str(conc)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(procs)
        ]
        for child in self.children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "READY"

    def go(self) -> None:
        for child in self.children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()

    def check(self) -> None:
        """Fail at once if a worker process died (else its jobs would be waited for forever)."""
        dead = [c.returncode for c in self.children if c.poll() is not None]
        if dead:
            raise SystemExit(f"a worker process exited with {dead[0]}")

    def stop(self) -> None:
        for child in self.children:
            assert child.stdin is not None
            child.stdin.close()
        for child in self.children:
            child.wait(timeout=60)


# -- the database ---------------------------------------------------------------------------------
def _fresh_database() -> None:
    import awa

    with psycopg.connect(f"{BASE_DSN}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DATABASE}")
    client = awa.Client(DSN)
    client.migrate()
    client.close()


def _reset(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "TRUNCATE awa.jobs, awa.dlq, awa.queues, awa.flow_key_buckets, awa.workers, awa.leader,"
        " awa.queue_summary, awa.schedules RESTART IDENTITY"
    )


def _analyze(conn: psycopg.Connection[Any]) -> None:
    """Statistics of the queue as filled: analyzed empty (after the TRUNCATE), the planner
    would plan the claims for a table of no rows, and a run would measure that plan."""
    conn.execute("VACUUM ANALYZE awa.jobs")


def _fill(n: int, keyed: bool, **limits: Any) -> None:
    import awa

    client = awa.Client(DSN)
    if limits:
        client.configure_queue(QUEUE, **limits)
    for start in range(0, n, 1000):
        client.insert_many(
            [
                awa.InsertSpec(
                    args={"n": i},
                    kind="noop",
                    queue=QUEUE,
                    concurrency_key=f"k{i % KEYS}" if keyed else None,
                )
                for i in range(start, min(n, start + 1000))
            ],
            returning="ids",
        )
    client.close()


def _completed(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM awa.jobs WHERE queue = %s AND state = 'completed'", (QUEUE,)
    ).fetchone()
    return int(row[0]) if row else 0


# -- throughput -----------------------------------------------------------------------------------
def _drain(a: argparse.Namespace, setting: str) -> dict[str, Any]:
    slots = a.procs * a.conc
    limits: dict[str, Any] = {
        "none": {},
        "concurrency_limit": {"concurrency_limit": slots},
        "keys": {"key_concurrency_limit": 1},
    }[setting]
    with psycopg.connect(DSN, autocommit=True) as conn:
        _reset(conn)
        _fill(a.n, keyed=setting == "keys", **limits)
        _analyze(conn)
        fleet = Fleet(a.procs, a.conc)
        started = time.perf_counter()
        fleet.go()
        while _completed(conn) < a.n:
            fleet.check()
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
        fleet.stop()
    return {"setting": setting, "n": a.n, "elapsed_s": elapsed, "jobs_per_s": a.n / elapsed}


def cmd_throughput(a: argparse.Namespace) -> None:
    _fresh_database()
    settings = a.settings.split(",")
    results: dict[str, list[float]] = {s: [] for s in settings}
    for rep in range(1, a.reps + 1):
        for setting in settings:
            result = _drain(a, setting)
            results[setting].append(result["jobs_per_s"])
            print(json.dumps({"rep": rep, "procs": a.procs, "conc": a.conc, **result}), flush=True)
    base = statistics.median(results["none"]) if results.get("none") else float("nan")
    for setting in settings:
        median = statistics.median(results[setting])
        spread = f"{min(results[setting]):,.0f}-{max(results[setting]):,.0f}"
        print(f"{setting}: {median:,.0f} jobs/s ({spread}), {median / base:.2f}x of no limit")


# -- rate -----------------------------------------------------------------------------------------
def _most_in_a_second(starts: list[float]) -> int:
    """The most starts in any window ``[t, t + 1 s]``: each window that holds the most starts
    a second after one of them, so trying each start as the window's first is enough."""
    return max((bisect_left(starts, t + 1.0 + 1e-9) - i for i, t in enumerate(starts)), default=0)


def cmd_rate(a: argparse.Namespace) -> None:
    _fresh_database()
    n = int(a.per_second * a.seconds * 1.5) + a.burst
    with psycopg.connect(DSN, autocommit=True) as conn:
        _reset(conn)
        _fill(n, keyed=False, rate_limit=(a.per_second, a.burst))
        _analyze(conn)
        fleet = Fleet(a.procs, a.conc)
        fleet.go()
        time.sleep(a.seconds)
        fleet.stop()
        rows = conn.execute(
            "SELECT attempted_at FROM awa.jobs WHERE queue = %s AND attempted_at IS NOT NULL",
            (QUEUE,),
        ).fetchall()
    moments: list[datetime] = sorted(row[0] for row in rows)
    first = moments[0]
    starts = [(m - first).total_seconds() for m in moments]
    settled = [t for t in starts if t >= 1.0]  # after the first second's burst
    span = settled[-1] - settled[0] if len(settled) > 1 else 0.0
    held = (len(settled) - 1) / span if span else 0.0
    most = _most_in_a_second(starts)
    print(
        json.dumps(
            {
                "procs": a.procs,
                "per_second": a.per_second,
                "burst": a.burst,
                "seconds": a.seconds,
                "started": len(starts),
                "held_per_s": round(held, 2),
                "off_by": round(held / a.per_second - 1, 4),
                "most_in_one_second": most,
                "bound_in_one_second": a.burst + a.per_second,
            }
        )
    )


# -- one process's claims ------------------------------------------------------------------------
_CLAIM_SETTINGS: dict[str, dict[str, Any]] = {
    "none": {},
    "concurrency_limit": {"concurrency_limit": 1_000_000},
    "rate_limit": {"rate_limit": (1_000_000.0, 1_000_000)},
    "keys": {"key_concurrency_limit": 1},
}


def cmd_claims(a: argparse.Namespace) -> None:
    """One process, no handlers: ``--claims`` claims of ``limit`` jobs (1 and 10) from a queue
    of 20,000 (over 1,000 keys for ``keys``), each followed by their finish, untimed; the
    median and 90th percentile of the claims alone. A limit never reached still takes the
    limited path, so this is what the path itself costs a claim."""
    from awa.adapters.postgres import PostgresStore
    from awa.domain import Complete, NewJob
    from awa.ports import Finish

    _fresh_database()
    store = PostgresStore(DSN)
    for setting, limits in _CLAIM_SETTINGS.items():
        for limit in (1, 10):
            with psycopg.connect(DSN, autocommit=True) as conn:
                _reset(conn)
                if limits:
                    store.configure_queue(QUEUE, **limits)
                keyed = setting == "keys"
                for start in range(0, 20_000, 5_000):
                    store.insert(
                        [
                            NewJob(
                                kind="noop",
                                queue=QUEUE,
                                concurrency_key=f"k{i % KEYS}" if keyed else None,
                            )
                            for i in range(start, start + 5_000)
                        ]
                    )
                _analyze(conn)
            times: list[float] = []
            for _ in range(a.claims):
                started = time.perf_counter()
                jobs = store.claim(QUEUE, limit=limit, deadline_duration_s=60.0)
                times.append(time.perf_counter() - started)
                store.finish([Finish(job.lease, Complete()) for job in jobs])
            times.sort()
            result = {
                "setting": setting,
                "limit": limit,
                "claims": a.claims,
                "median_ms": round(statistics.median(times) * 1000, 3),
                "p90_ms": round(times[int(len(times) * 0.9)] * 1000, 3),
            }
            print(json.dumps(result), flush=True)
    store.close()


# -- plans --------------------------------------------------------------------------------------
_FILL = """
INSERT INTO awa.jobs (kind, queue, state, run_at, created_at, concurrency_key, ordering_key)
SELECT 'noop', %(queue)s, 'available', now() - interval '1 hour', now() - interval '1 hour',
       CASE WHEN %(keyed)s THEN 'k' || (i %% 1000) END,
       CASE WHEN i %% 10 = 0 THEN 'o' || (i %% 997) END
FROM generate_series(1, %(n)s) AS i
"""


AGING_US = 60_000_000  # priority aging of a minute a step


def cmd_plans(a: argparse.Namespace) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) of the claim statements behind ``--n`` queued jobs, in a
    transaction rolled back: the plans ``docs/flow-control.md`` shows."""
    from awa.adapters.postgres._sql import SQL

    _fresh_database()
    statements = {
        "claim (no limit)": ("claim", "plain", {"deadline": None}),
        "claim_aged (no limit)": (
            "claim_aged",
            "plain",
            {"deadline": None, "aging_us": 60_000_000},
        ),
        "flow_candidates (concurrency_limit)": ("flow_candidates", "plain", {}),
        "flow_candidates_keyed (key_rate_limit, or aging)": ("flow_candidates_keyed", "keyed", {}),
        "flow_candidates_turns (key_concurrency_limit), the cursor mid-way": (
            "flow_candidates_turns",
            "keyed",
            {"turn_cursor": "k500"},
        ),
        "flow_candidates_turns (key_concurrency_limit), the key-less jobs' turn next": (
            "flow_candidates_turns",
            "keyed",
            {"turn_cursor": "k999"},
        ),
    }
    with psycopg.connect(DSN, autocommit=True) as conn:
        for queue, keyed in (("plain", False), ("keyed", True)):
            conn.execute(_FILL, {"queue": queue, "keyed": keyed, "n": a.n})  # type: ignore[arg-type]
        conn.execute("VACUUM ANALYZE awa.jobs_hot")
    for title, (name, queue, extra) in statements.items():
        with psycopg.connect(DSN) as conn:
            conn.execute(SQL["session_settings"])  # as the store's sessions: no JIT
            if "turn_cursor" in extra:  # the turn window reads the key limit and cursor here
                conn.execute(
                    "INSERT INTO awa.queues (queue, key_concurrency_limit, turn_cursor,"
                    " turn_taken) VALUES (%s, 1, %s, true)",
                    [queue, extra.pop("turn_cursor")],
                )
            cur = psycopg.ClientCursor(conn)
            params = {"now": None, "queue": queue, "limit": a.limit, **extra}
            rows = cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + SQL[name], params).fetchall()
            conn.rollback()
        plan = "\n".join(row[0] for row in rows)
        print(f"== {title}, {a.n:,} queued, limit {a.limit}")
        print(plan)
        print(f"-- sequential scans: {plan.count('Seq Scan')}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    child = commands.add_parser("child")
    child.add_argument("--conc", type=int, default=10)
    claims = commands.add_parser("claims")
    claims.add_argument("--claims", type=int, default=300)
    plans = commands.add_parser("plans")
    plans.add_argument("--n", type=int, default=1_000_000)
    plans.add_argument("--limit", type=int, default=10)
    for name in ("throughput", "rate"):
        p = commands.add_parser(name)
        p.add_argument("--procs", type=int, default=4)
        p.add_argument("--conc", type=int, default=10)
        if name == "throughput":
            p.add_argument("--n", type=int, default=20000)
            p.add_argument("--reps", type=int, default=3)
            p.add_argument("--settings", default="none,concurrency_limit,keys")
        else:
            p.add_argument("--per-second", type=float, default=200.0)
            p.add_argument("--burst", type=int, default=20)
            p.add_argument("--seconds", type=float, default=60.0)
    a = parser.parse_args()
    if a.command == "child":
        asyncio.run(_child(a.conc))
    elif a.command == "throughput":
        cmd_throughput(a)
    elif a.command == "plans":
        cmd_plans(a)
    elif a.command == "claims":
        cmd_claims(a)
    else:
        cmd_rate(a)


if __name__ == "__main__":
    main()
