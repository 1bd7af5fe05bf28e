"""An hour of steady load: insert and drain at a fixed rate and report every minute.

    python bench/soak.py max [--rates 2000,3000,4000,5000,6000,8000] [--seconds 60] [--conc 50]
    python bench/soak.py run --rate 1400 [--minutes 60] [--conc 50] [--out soak.jsonl]
    python bench/soak.py run --peer pgqueuer --rate 1400 --minutes 15 --out soak.jsonl
    python bench/soak.py run --rate 3500 --minutes 20 --retention-s 300 --out soak.jsonl
    python bench/soak.py table soak.jsonl

``max`` finds the rate to soak at: one ``--seconds`` period at each of ``--rates`` in turn, each
in a fresh database; the highest rate the worker keeps up with (completions at least 98% of
inserts and pickup p99 under a second) is the measured maximum. A producer inserting as fast
as it can is no measure: its inserts starve the worker of the database.

``run`` starts a producer process that inserts ``--rate`` jobs a second (one ``insert_many``
every 100 ms, each job carrying the time it was inserted) and a worker process
(``client.start([(queue, conc)])`` with every setting at its default, default retention
included: finished jobs are kept 24 hours, unless ``--retention-s`` says otherwise), and every
minute prints one JSON line: jobs inserted and completed in that minute, pickup latency
(insert -> handler start) p50/p99, the job table's and each index's size (its partitions'
summed, and the hot partition's alone), live and dead rows, autovacuum and autoanalyze runs so
far, HOT updates, WAL written and the database's CPU (postmaster and backends, from ``/proc``;
run as a user who can read them). ``table`` turns those lines into the markdown table of
docs/performance.md.

The database (``--dsn``, default ``$PEERBENCH_DSN/awa_soak``) is dropped, created and migrated
first. ``PGDATA`` names the cluster's data directory, for the CPU figures.

``--peer pgqueuer`` or ``--peer awa`` (the original AWA, awa-pg) runs the same soak through
that library's adapter in ``../shared/bench/peers`` (``PEERBENCH_DIR``; the same API choices as
the peers' benchmark: its bulk insert, its worker at ``--conc``), in the interpreter
``PEERBENCH_PY`` names, against the adapter's own database, which is dropped and set up again.
Sizes, dead rows and vacuums are then summed over every table of that database (the libraries
keep their jobs in different tables); ``runnable`` is ours alone.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

BASE_DSN = os.environ.get("PEERBENCH_DSN", "postgresql://postgres@127.0.0.1:55432")
PEER_PY = os.environ.get("PEERBENCH_PY", "python3")
OURS = "awa-main"
QUEUE = "soak"
TICK_S = 0.1  # the producer inserts once per tick


@dataclasses.dataclass
class SoakArgs:
    ts: float


# -- the two child processes -------------------------------------------------------------------
class _Ours:
    """This repository's awa, called directly."""

    def __init__(self, dsn: str) -> None:
        import awa

        self.awa: Any = awa
        self.client: Any = awa.AsyncClient(dsn)

    async def insert(self, n: int, ts: float) -> None:
        awa = self.awa
        specs = [awa.InsertSpec(args=SoakArgs(ts), queue=QUEUE) for _ in range(n)]
        await self.client.insert_many(specs)

    async def start(
        self, conc: int, picked_ms: list[float], retention_s: float | None = None
    ) -> None:
        async def handle(job: Any) -> None:
            picked_ms.append((time.time() - job.args.ts) * 1000)

        self.client.task(SoakArgs, queue=QUEUE)(handle)
        config = None
        if retention_s is not None:
            config = self.awa.RuntimeConfig(finished_retention_s=retention_s)
        await self.client.start([(QUEUE, conc)], runtime_config=config)

    async def close(self) -> None:
        if self.client.runtime is not None:
            await self.client.shutdown(timeout=10)
        self.client.store.close()


class _Peer:
    """A peer library through its adapter in ``../shared/bench/peers``."""

    def __init__(self, peer: str) -> None:
        from scale_child import _adapter

        self.adapter = _adapter(peer)

    async def open(self) -> None:
        await self.adapter.open()

    async def insert(self, n: int, ts: float) -> None:
        await self.adapter.enqueue_bulk(QUEUE, [{"seq": i, "ts": ts} for i in range(n)])

    async def start(self, conc: int, picked_ms: list[float]) -> None:
        async def handle(args: dict[str, Any]) -> None:
            picked_ms.append((time.time() - args["ts"]) * 1000)

        await self.adapter.start_worker(QUEUE, conc, handle)

    async def close(self) -> None:
        await self.adapter.stop_worker()
        await self.adapter.close()


async def _side(peer: str, dsn: str) -> _Ours | _Peer:
    if peer == OURS:
        return _Ours(dsn)
    side = _Peer(peer)
    await side.open()
    return side


async def _produce(
    peer: str, dsn: str, rate: float, batch: int, t0: float, periods: int, period_s: float
) -> None:
    """Insert ``rate`` jobs a second until the last period ends (``rate`` 0: as fast as
    batches of ``batch`` go); print each period's count and insert latency."""
    side = await _side(peer, dsn)
    inserted, call_ms = 0, list[float]()
    period, next_tick, owed = 1, t0, 0.0
    await asyncio.sleep(max(0.0, t0 - time.time()))  # the first period starts at t0
    try:
        while period <= periods:
            now = time.time()
            if now >= t0 + period * period_s:
                _emit(
                    {
                        "role": "producer",
                        "period": period,
                        "inserted": inserted,
                        "insert_ms_p50": _pct(call_ms, 50),
                        "insert_ms_p99": _pct(call_ms, 99),
                    }
                )
                inserted, call_ms, period = 0, [], period + 1
                continue
            if rate:
                if now < next_tick:
                    await asyncio.sleep(next_tick - now)
                    continue
                owed += rate * TICK_S
                next_tick += TICK_S
                n, owed = int(owed), owed - int(owed)
            else:
                n = batch
            if n:
                ts = time.time()
                await side.insert(n, ts)
                call_ms.append((time.time() - ts) * 1000)
                inserted += n
    finally:
        await side.close()


async def _work(
    peer: str,
    dsn: str,
    conc: int,
    t0: float,
    periods: int,
    period_s: float,
    retention_s: float | None = None,
) -> None:
    """Drain the queue with every default setting (but ``retention_s``, when given: ours
    only); print each period's completions and pickup latencies."""
    side = await _side(peer, dsn)
    picked_ms: list[float] = []
    if isinstance(side, _Ours):
        await side.start(conc, picked_ms, retention_s)
    else:
        await side.start(conc, picked_ms)
    try:
        for period in range(1, periods + 1):
            await asyncio.sleep(max(0.0, t0 + period * period_s - time.time()))
            done, picked_ms[:] = list(picked_ms), []
            _emit(
                {
                    "role": "worker",
                    "period": period,
                    "handled": len(done),
                    "pickup_ms_p50": _pct(done, 50),
                    "pickup_ms_p99": _pct(done, 99),
                }
            )
    finally:
        await side.close()


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))], 2)


def _emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj), flush=True)


# -- the parent: children, database figures, one line a period ---------------------------------
# awa.jobs is partitioned (migration 0010): its figures are those of its partitions, summed,
# and the hot partition's (what claims, completions and vacuum work on) on their own
_JOB_PARTITIONS = "SELECT relid FROM pg_partition_tree('awa.jobs') WHERE isleaf"
_TABLE_STATS = f"""
SELECT sum(pg_relation_size(relid)), sum(pg_indexes_size(relid)),
       sum(n_live_tup), sum(n_dead_tup), sum(autovacuum_count), sum(autoanalyze_count),
       sum(n_tup_upd), sum(n_tup_hot_upd), sum(n_tup_del), pg_current_wal_lsn() - '0/0'::pg_lsn
FROM pg_stat_user_tables WHERE relid IN ({_JOB_PARTITIONS})
"""
_HOT_STATS = """
SELECT pg_relation_size(relid), pg_indexes_size(relid), n_live_tup, n_dead_tup,
       autovacuum_count
FROM pg_stat_user_tables WHERE relid = 'awa.jobs_hot'::regclass
"""
_INDEX_SIZES = f"""
SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes
WHERE relid IN ({_JOB_PARTITIONS}) ORDER BY indexrelname
"""
_RUNNABLE = "SELECT count(*) FROM awa.jobs WHERE state IN ('available', 'scheduled', 'retryable')"
# a peer's figures: every table of its database together
_ALL_TABLES = """
SELECT sum(pg_relation_size(relid)), sum(pg_indexes_size(relid)),
       sum(n_live_tup), sum(n_dead_tup), sum(autovacuum_count), sum(autoanalyze_count),
       sum(n_tup_upd), sum(n_tup_hot_upd), sum(n_tup_del), pg_current_wal_lsn() - '0/0'::pg_lsn
FROM pg_stat_user_tables
"""
_ALL_INDEXES = """
SELECT schemaname || '.' || indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes
ORDER BY 1
"""


def pg_cpu_s() -> float | None:
    """CPU seconds of the postmaster (with its reaped children) and its live backends."""
    pgdata = os.environ.get("PGDATA")
    if not pgdata:
        return None
    pm = int(Path(pgdata, "postmaster.pid").read_text().split()[0])
    ticks = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
        if int(pid) == pm:
            ticks += utime + stime + cutime + cstime
        elif int(fields[1]) == pm:
            ticks += utime + stime
    return ticks / os.sysconf("SC_CLK_TCK")


def load_avg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def _db_figures(conn: psycopg.Connection[Any], peer: str = OURS) -> dict[str, Any]:
    ours = peer == OURS
    row = conn.execute(_TABLE_STATS if ours else _ALL_TABLES).fetchone()
    assert row is not None
    keys = (
        "heap_bytes",
        "index_bytes",
        "live_rows",
        "dead_rows",
        "autovacuums",
        "autoanalyzes",
        "updates",
        "hot_updates",
        "deletes",
        "wal_bytes",
    )
    out: dict[str, Any] = dict(zip(keys, (int(v or 0) for v in row), strict=True))
    sizes = conn.execute(_INDEX_SIZES if ours else _ALL_INDEXES).fetchall()
    out["indexes"] = {name: size for name, size in sizes}
    runnable = conn.execute(_RUNNABLE).fetchone() if ours else None
    out["runnable"] = runnable[0] if runnable is not None else None
    if ours:
        hot = conn.execute(_HOT_STATS).fetchone()
        assert hot is not None
        names = ("heap_bytes", "index_bytes", "live_rows", "dead_rows", "autovacuums")
        out["hot"] = dict(zip(names, (int(v or 0) for v in hot), strict=True))
    return out


def _peer_database(peer: str) -> str:
    """The database a peer's adapter uses (its module's ``DB``)."""
    from scale_child import ADAPTERS, PEERS_DIR

    sys.path.insert(0, str(PEERS_DIR))
    source = (PEERS_DIR / f"{ADAPTERS[peer][0]}.py").read_text()
    for line in source.splitlines():
        if line.startswith("DB = "):
            return str(line.split("=", 1)[1].strip().strip("\"'"))
    raise RuntimeError(f"no DB = ... in the {peer} adapter")


def fresh_database(dsn: str, peer: str = OURS) -> None:
    base, name = dsn.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    if peer != OURS:  # the adapter installs its own schema
        setup = [PEER_PY, str(Path(__file__).with_name("scale_child.py")), peer, "setup"]
        subprocess.run(setup, check=True, timeout=600)
        return
    import awa

    client = awa.Client(dsn)
    client.migrate()
    client.store.close()  # type: ignore[attr-defined]


def _child(
    role: str, a: argparse.Namespace, t0: float, periods: int, period_s: float, extra: list[str]
) -> subprocess.Popen[str]:
    cmd = [
        sys.executable if a.peer == OURS else PEER_PY,
        __file__,
        role,
        "--peer",
        a.peer,
        "--dsn",
        a.dsn,
        "--t0",
        repr(t0),
        "--periods",
        str(periods),
        "--period-s",
        str(period_s),
        *extra,
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def _collect(
    proc: subprocess.Popen[str], into: dict[tuple[str, int], dict[str, Any]], lock: threading.Lock
) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        rec = json.loads(line)
        with lock:
            into[(rec["role"], rec["period"])] = rec


def soak(
    a: argparse.Namespace, rate: float, periods: int, period_s: float, out: Any
) -> list[dict[str, Any]]:
    if a.peer != OURS:
        a.dsn = f"{BASE_DSN}/{_peer_database(a.peer)}"
    fresh_database(a.dsn, a.peer)
    t0 = time.time() + 3.0  # both children connected before the first period starts
    lines: dict[tuple[str, int], dict[str, Any]] = {}
    lock = threading.Lock()
    producer = _child(
        "_produce", a, t0, periods, period_s, ["--rate", str(rate), "--batch", str(a.batch)]
    )
    retention = [] if a.retention_s is None else ["--retention-s", str(a.retention_s)]
    worker = _child("_work", a, t0, periods, period_s, ["--conc", str(a.conc), *retention])
    for proc in (producer, worker):
        threading.Thread(target=_collect, args=(proc, lines, lock), daemon=True).start()
    rows = []
    with psycopg.connect(a.dsn, autocommit=True) as conn:
        time.sleep(max(0.0, t0 - time.time()))
        last, last_cpu, last_t = _db_figures(conn, a.peer), pg_cpu_s(), time.time()
        for period in range(1, periods + 1):
            time.sleep(max(0.0, t0 + period * period_s - time.time()))
            db, cpu, now = _db_figures(conn, a.peer), pg_cpu_s(), time.time()
            deadline = now + 30
            while time.time() < deadline:
                with lock:
                    have = ("producer", period) in lines and ("worker", period) in lines
                if have or producer.poll() is not None or worker.poll() is not None:
                    break
                time.sleep(0.1)
            with lock:
                prod, work = lines.get(("producer", period), {}), lines.get(("worker", period), {})
            row = {
                "peer": a.peer,
                "period": period,
                "period_s": period_s,
                "rate": rate,
                "inserted": prod.get("inserted"),
                "completed": work.get("handled"),
                "insert_ms_p50": prod.get("insert_ms_p50"),
                "insert_ms_p99": prod.get("insert_ms_p99"),
                "pickup_ms_p50": work.get("pickup_ms_p50"),
                "pickup_ms_p99": work.get("pickup_ms_p99"),
                **db,
                "wal_bytes": db["wal_bytes"] - last["wal_bytes"],
                "pg_cpu_pct": None
                if cpu is None or last_cpu is None
                else round(100 * (cpu - last_cpu) / (now - last_t), 1),
                "load1": load_avg(),
            }
            last, last_cpu, last_t = db, cpu, now
            rows.append(row)
            print(json.dumps(row), file=out, flush=True)
            if out is not sys.stdout:
                _brief(row)
    for proc in (producer, worker):
        proc.wait(timeout=60)
    return rows


def _brief(row: dict[str, Any]) -> None:
    mib = 1 << 20
    print(
        f"min {row['period']:>3}: in {row['inserted']} done {row['completed']}"
        f" pickup p50/p99 {row['pickup_ms_p50']}/{row['pickup_ms_p99']} ms"
        f" heap {row['heap_bytes'] / mib:.0f} MiB idx {row['index_bytes'] / mib:.0f} MiB"
        f" dead {row['dead_rows']} av {row['autovacuums']} runnable {row['runnable']}"
        f" pg cpu {row['pg_cpu_pct']}% load {row['load1']}",
        flush=True,
    )


def keeps_up(row: dict[str, Any]) -> bool:
    """Whether the worker kept up with the producer over a period."""
    done, inserted, p99 = row["completed"] or 0, row["inserted"] or 0, row["pickup_ms_p99"]
    return inserted > 0 and done >= 0.98 * inserted and p99 is not None and p99 < 1000


def cmd_max(a: argparse.Namespace) -> None:
    held = 0.0
    with open(a.out, "a") if a.out else sys.stdout as out:
        for rate in (float(r) for r in a.rates.split(",")):
            [row] = soak(a, rate, 1, a.seconds, out)
            if not keeps_up(row):
                break
            held = rate
    print(f"maximum: {held:,.0f} jobs/s kept up with; soak at 70%: --rate {0.7 * held:.0f}")


def cmd_run(a: argparse.Namespace) -> None:
    with open(a.out, "a") if a.out else sys.stdout as out:
        soak(a, a.rate, a.minutes, 60.0, out)


def _hot_mib(r: dict[str, Any]) -> str:
    hot = r.get("hot")  # absent from runs before migration 0010
    return "n/a" if hot is None else f"{(hot['heap_bytes'] + hot['index_bytes']) / (1 << 20):,.0f}"


def _claim_index_mib(r: dict[str, Any]) -> str:
    sizes = r["indexes"]
    size = sizes.get("jobs_hot_claim_idx", sizes.get("jobs_claim_idx", 0))
    return f"{size / (1 << 20):,.1f}"


def cmd_table(a: argparse.Namespace) -> None:
    rows = [json.loads(x) for x in Path(a.file).read_text().splitlines() if x.strip()]
    mib = 1 << 20
    print(
        "| minute | inserted/s | completed/s | pickup p50 / p99 ms | heap MiB | indexes MiB"
        " | hot heap + indexes MiB | claim index MiB | dead rows | autovacuums | WAL MiB/min"
        " | PG CPU % |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    show = {1, 2, 5, len(rows)} | {m for m in range(10, len(rows) + 1, 10)}
    for r in rows:
        if r["period"] not in show:
            continue
        s = r["period_s"]
        print(
            f"| {r['period']} | {r['inserted'] / s:,.0f} | {r['completed'] / s:,.0f}"
            f" | {r['pickup_ms_p50']} / {r['pickup_ms_p99']} | {r['heap_bytes'] / mib:,.0f}"
            f" | {r['index_bytes'] / mib:,.0f} | {_hot_mib(r)} | {_claim_index_mib(r)}"
            f" | {r['dead_rows']:,} | {r['autovacuums']} | {r['wal_bytes'] / mib:,.0f}"
            f" | {r['pg_cpu_pct']} |"
        )
    first, last = rows[0], rows[-1]
    ratio = last["completed"] / first["completed"] if first["completed"] else float("nan")
    print(
        f"\nlast minute / first minute completed: {ratio:.3f};"
        f" mean {statistics.mean(r['completed'] for r in rows) / 60:,.0f} jobs/s"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("max", "run", "table", "_produce", "_work"):
        s = sub.add_parser(name)
        if name == "table":
            s.add_argument("file")
            continue
        s.add_argument("--peer", default=OURS, choices=[OURS, "pgqueuer", "awa"])
        s.add_argument("--dsn", default=f"{BASE_DSN}/awa_soak")
        s.add_argument("--rates", default="2000,3000,4000,5000,6000,8000")
        s.add_argument("--conc", type=int, default=50)
        s.add_argument("--retention-s", type=float, help="ours: finished_retention_s")
        s.add_argument("--batch", type=int, default=200)
        s.add_argument("--seconds", type=float, default=60.0)
        s.add_argument("--rate", type=float, default=0.0)
        s.add_argument("--minutes", type=int, default=60)
        s.add_argument("--out")
        s.add_argument("--t0", type=float)
        s.add_argument("--periods", type=int)
        s.add_argument("--period-s", type=float)
    a = p.parse_args()
    if a.cmd == "_produce":
        asyncio.run(_produce(a.peer, a.dsn, a.rate, a.batch, a.t0, a.periods, a.period_s))
    elif a.cmd == "_work":
        asyncio.run(_work(a.peer, a.dsn, a.conc, a.t0, a.periods, a.period_s, a.retention_s))
    else:
        {"max": cmd_max, "run": cmd_run, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    main()
