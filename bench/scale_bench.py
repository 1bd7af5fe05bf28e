"""Scale with the backlog and with worker processes, side by side with the peers.

    python bench/scale_bench.py backlog [--sizes 20000,1000000] [--drain 20000] [--out F]
    python bench/scale_bench.py procs [--counts 1,2,4] [--n 40000] [--out F]
    python bench/scale_bench.py table F

Every measurement starts from a freshly dropped, created and set-up database, and drives each
library through ``bench/scale_child.py`` (the peers' adapters: same API choices as the peers'
benchmark) in that library's interpreter: this one for ``awa-main`` (this repository),
``PEERBENCH_PY`` for ``pgqueuer`` and ``awa`` (awa-pg). Libraries take turns within one run,
so their ratios share the machine's load of the moment.

``backlog``: insert SIZE jobs in bulk (the insert rate per 100,000 as the table grows), then
2,000 one by one, then time one worker process (concurrency 50, no-op handler) through the first
``--drain`` handled jobs: the drain rate with SIZE queued. For awa-main the claim statement's
plan is captured first, ``EXPLAIN (ANALYZE, BUFFERS)`` in a rolled-back transaction.

``procs``: insert ``--n`` jobs, start COUNT worker processes (concurrency 50 each) at once and
time them until ``--n`` handlers have run, summed over the processes; meanwhile sample lock
waits (``pg_stat_activity``), and measure WAL written and the database's and the workers' CPU
(``/proc``; ``PGDATA`` names the cluster).

Completion is counted by handler returns for every library (awa-pg offers no cheap completed
count; see ``shared/bench/peers/README.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from soak import pg_cpu_s  # noqa: E402

BASE_DSN = os.environ.get("PEERBENCH_DSN", "postgresql://postgres@127.0.0.1:55432")
PEER_PY = os.environ.get("PEERBENCH_PY", "python3")
DBS = {
    "awa-main": os.environ.get("AWA_BENCH_DB", "awa_main_bench"),
    "pgqueuer": "pgqueuer_bench",
    "awa": "awa_bench",
}
CHILD = str(HERE / "scale_child.py")
CLAIM_LIMIT = 50
# awa.jobs is partitioned (migration 0010): its heap is its partitions'
_HEAP = (
    "SELECT sum(pg_relation_size(relid))::bigint FROM pg_partition_tree('awa.jobs') WHERE isleaf"
)


def _python(peer: str) -> str:
    return sys.executable if peer == "awa-main" else PEER_PY


def _child(peer: str, *args: str) -> list[str]:
    return [_python(peer), CHILD, peer, *args]


def _lines(peer: str, *args: str) -> list[dict[str, Any]]:
    done = subprocess.run(_child(peer, *args), capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{peer} {args[0]} failed: {done.stderr[-2000:]}")
    return [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]


def fresh_database(peer: str, storage: str | None = None) -> None:
    """Drop, create and set up ``peer``'s database; ``storage`` (awa-main only, e.g.
    ``fillfactor=100``) overrides the hot partition's storage settings, to compare them."""
    with psycopg.connect(f"{BASE_DSN}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DBS[peer]} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DBS[peer]}")
    _lines(peer, "setup")
    if storage and peer == "awa-main":
        with _db(peer) as conn:
            conn.execute(f"ALTER TABLE awa.jobs_hot SET ({storage})")


def _db(peer: str) -> psycopg.Connection[Any]:
    return psycopg.connect(f"{BASE_DSN}/{DBS[peer]}", autocommit=True)


def _cpu_of(pids: list[int]) -> float:
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += sum(int(x) for x in fields[11:13])
    return ticks / os.sysconf("SC_CLK_TCK")


def claim_plan(queue: str) -> str:
    """awa-main's claim statement under EXPLAIN (ANALYZE, BUFFERS), rolled back."""
    from awa.adapters.postgres._sql import SQL

    params = {"now": None, "queue": queue, "limit": CLAIM_LIMIT, "deadline": timedelta(minutes=30)}
    with psycopg.connect(f"{BASE_DSN}/{DBS['awa-main']}") as conn:
        cur = psycopg.ClientCursor(conn)
        cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + SQL["claim"], params)
        plan = "\n".join(row[0] for row in cur.fetchall())
        conn.rollback()
    return plan


def drain(peer: str, queue: str, processes: int, target: int, conc: int) -> dict[str, Any]:
    """Time ``processes`` workers from ``go`` until ``target`` handlers ran in all."""
    procs = [
        subprocess.Popen(
            _child(peer, "work", "--queue", queue, "--conc", str(conc)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    counts = [0] * processes
    stamps: list[tuple[float, int]] = []
    lock = threading.Lock()
    for proc in procs:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "READY":
            raise RuntimeError(f"{peer} worker did not start")

    def read(i: int, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("H "):
                with lock:
                    counts[i] = int(line.split()[1])
                    stamps.append((time.perf_counter(), sum(counts)))

    for i, proc in enumerate(procs):
        threading.Thread(target=read, args=(i, proc), daemon=True).start()
    lock_waits: list[int] = []
    with _db(peer) as conn:
        wal0 = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0]  # type: ignore[index]
        pg0, work0 = pg_cpu_s(), _cpu_of([p.pid for p in procs])
        t0 = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        while True:
            with lock:
                total = sum(counts)
            if total >= target or time.perf_counter() - t0 > 900:
                break
            waiting = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            ).fetchone()[0]  # type: ignore[index]
            lock_waits.append(waiting)
            time.sleep(0.05)
        t1 = time.perf_counter()
        pg1, work1 = pg_cpu_s(), _cpu_of([p.pid for p in procs])
        wal1 = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0]  # type: ignore[index]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
    for proc in procs:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    elapsed = t1 - t0
    with lock:
        lo = next((t for t, c in stamps if c >= target * 0.1), None)
        hi = next((t for t, c in stamps if c >= target * 0.9), None)
    steady = (0.8 * target) / (hi - lo) if lo is not None and hi is not None and hi > lo else None
    return {
        "handled": total,
        "elapsed_s": round(elapsed, 3),
        "jobs_per_s": round(total / elapsed),
        "steady_jobs_per_s": None if steady is None else round(steady),
        "pg_cpu_pct": None if pg0 is None or pg1 is None else round(100 * (pg1 - pg0) / elapsed),
        "workers_cpu_pct": round(100 * (work1 - work0) / elapsed),
        "wal_bytes_per_job": round((wal1 - wal0) / max(total, 1)),
        "lock_waiters_mean": round(sum(lock_waits) / max(len(lock_waits), 1), 2),
        "lock_waiters_max": max(lock_waits, default=0),
    }


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def cmd_backlog(a: argparse.Namespace) -> None:
    with open(a.out, "a") as out:
        # one library's sizes back to back: its ratio shares the machine's load of the moment
        for peer in a.peers.split(","):
            for size in (int(s) for s in a.sizes.split(",")):
                queue = f"b{size}"
                fresh_database(peer, a.storage)
                fill = _lines(peer, "fill", "--n", str(size), "--queue", queue)
                one = _lines(peer, "one", "--n", str(a.n_one), "--queue", f"o{size}")
                plan = claim_plan(queue) if peer == "awa-main" else None
                res = drain(peer, queue, 1, min(a.drain, size), a.conc)
                row = {
                    "bench": "backlog",
                    "peer": peer,
                    "size": size,
                    "fill": fill,
                    "one_by_one_jobs_per_s": one[0]["jobs_per_s"],
                    **res,
                    "plan": plan,
                    "load1": _load(),
                    "at": time.strftime("%H:%M:%S"),
                }
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(
                    json.dumps({k: v for k, v in row.items() if k not in ("plan", "fill")}),
                    flush=True,
                )


def cmd_procs(a: argparse.Namespace) -> None:
    with open(a.out, "a") as out:
        for count in (int(c) for c in a.counts.split(",")):
            for peer in a.peers.split(","):
                fresh_database(peer, a.storage)
                _lines(peer, "fill", "--n", str(a.n), "--queue", "p")
                res = drain(peer, "p", count, a.n, a.conc)
                heap = None
                if peer == "awa-main":
                    with _db(peer) as conn:
                        heap = conn.execute(_HEAP).fetchone()[0]  # type: ignore[index]
                row = {
                    "bench": "procs",
                    "peer": peer,
                    "processes": count,
                    "n": a.n,
                    **res,
                    "storage": a.storage,
                    "heap_bytes": heap,
                    "load1": _load(),
                    "at": time.strftime("%H:%M:%S"),
                }
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(json.dumps(row), flush=True)


def cmd_table(a: argparse.Namespace) -> None:
    rows = [json.loads(x) for x in Path(a.file).read_text().splitlines() if x.strip()]
    backlog = [r for r in rows if r["bench"] == "backlog"]
    if backlog:
        print(
            "| library | queued | drain jobs/s (steady) | bulk insert jobs/s, first / last"
            " 100k | one-by-one jobs/s | PG CPU % |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        for r in backlog:
            f = r["fill"]
            print(
                f"| {r['peer']} | {r['size']:,} | {r['jobs_per_s']:,} ({r['steady_jobs_per_s']:,})"
                f" | {f[0]['jobs_per_s']:,} / {f[-1]['jobs_per_s']:,}"
                f" | {r['one_by_one_jobs_per_s']:,} | {r['pg_cpu_pct']} |"
            )
    procs = [r for r in rows if r["bench"] == "procs"]
    if procs:
        print(
            "\n| library | processes | jobs/s | PG CPU % | workers CPU % | WAL bytes/job"
            " | lock waiters mean (max) |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in sorted(procs, key=lambda r: (r["peer"], r["processes"])):
            print(
                f"| {r['peer']} | {r['processes']} | {r['jobs_per_s']:,} | {r['pg_cpu_pct']}"
                f" | {r['workers_cpu_pct']} | {r['wal_bytes_per_job']:,}"
                f" | {r['lock_waiters_mean']} ({r['lock_waiters_max']}) |"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("backlog")
    b.add_argument("--sizes", default="20000,1000000")
    b.add_argument("--drain", type=int, default=20000)
    b.add_argument("--n-one", type=int, default=2000)
    r = sub.add_parser("procs")
    r.add_argument("--counts", default="1,2,4")
    r.add_argument("--n", type=int, default=40000)
    for s in (b, r):
        s.add_argument("--peers", default="awa-main,pgqueuer,awa")
        s.add_argument("--conc", type=int, default=50)
        s.add_argument("--out", default="scale.jsonl")
        s.add_argument("--storage", help="awa-main only: ALTER TABLE awa.jobs_hot SET (this)")
    t = sub.add_parser("table")
    t.add_argument("file")
    a = p.parse_args()
    {"backlog": cmd_backlog, "procs": cmd_procs, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    main()
