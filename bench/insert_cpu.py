"""Where an insert's time goes: CPU per job in the producer and in its PostgreSQL backend, ours
beside pgqueuer's, on the peers' enqueue workload, in one process, alternating.

    python bench/insert_cpu.py [--mode bulk|one] [--reps 20] [--dsn postgresql://...@host:port]

CPU (the producer's ``process_time``, the backend's utime + stime from ``/proc``) counts the
work itself, so on a machine other processes share it moves far less than jobs/s do; run it
on the database's host, as a user who can read the backends' ``/proc`` entries. It needs
pgqueuer (``pip install pgqueuer``) next to awa, and creates the databases ``insert_cpu_awa``
and ``insert_cpu_pgqueuer`` (dropped and made again).

Workload (the peers'): args ``{seq, ts}``; bulk is 1,000 jobs a call
(``client.insert_many``, returning the jobs and, as pgqueuer does, only the ids / pgqueuer's
list form of ``enqueue``); one is a call per job (``client.insert`` / ``enqueue``), each its
own transaction, beside the floor under both: a bare prepared ``INSERT ... RETURNING`` of the
same args, committed, from asyncpg (pgqueuer's driver) and from psycopg (ours), into a table
with only a primary key (database ``insert_cpu_bare``). One by one also runs awa's own
statement (``insert_job.sql``, prepared, fixed parameters, no client around it) from asyncpg,
into awa's schema as migrated and into a copy without its CHECK constraints (database
``insert_cpu_nochecks``): the ceiling of awa's row on pgqueuer's driver, with and without the
checks the database keeps.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import time
from collections.abc import Awaitable, Callable

import psycopg

import awa
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.inserts.caller_connections import _numbered
from awa.adapters.postgres.inserts.encoding import single_params
from awa.domain import NewJob

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
DATABASES = {
    "awa": "insert_cpu_awa",
    "pgqueuer": "insert_cpu_pgqueuer",
    "bare": "insert_cpu_bare",
    "nochecks": "insert_cpu_nochecks",
}
# the floor under any library's single insert: one prepared INSERT ... RETURNING of a row of the
# same args into a table with nothing but a primary key, committed (autocommit) and waited for
_BARE_TABLE = "CREATE TABLE bare_jobs (id bigserial PRIMARY KEY, kind text, args jsonb)"
_BARE_INSERT = "INSERT INTO bare_jobs (kind, args) VALUES ({}, {}::jsonb) RETURNING id"
_DROP_CHECKS = """DO $$ DECLARE c record; BEGIN
  FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'awa.jobs'::regclass AND contype = 'c'
  LOOP EXECUTE format('ALTER TABLE awa.jobs DROP CONSTRAINT %I', c.conname); END LOOP;
END $$"""


@dataclasses.dataclass
class BenchArgs:
    seq: int
    ts: float


def backend_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def fresh_databases(dsn: str) -> None:
    with psycopg.connect(f"{dsn}/postgres", autocommit=True) as conn:
        for name in DATABASES.values():
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")


def backends(dsn: str, database: str) -> list[int]:
    with psycopg.connect(f"{dsn}/postgres", autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = %s AND backend_type = 'client backend'",
            (database,),
        ).fetchall()
    return [pid for (pid,) in rows]


async def measure(a: argparse.Namespace) -> None:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    fresh_databases(a.dsn)
    client = awa.AsyncClient(f"{a.dsn}/{DATABASES['awa']}")
    await client.migrate()
    pg_conn = await asyncpg.connect(f"{a.dsn}/{DATABASES['pgqueuer']}")
    queries = Queries(AsyncpgDriver(pg_conn))
    await queries.install()
    n = 1000 if a.mode == "bulk" else 100
    payloads = [{"seq": i, "ts": 0.0} for i in range(n)]
    bare_pg = await asyncpg.connect(f"{a.dsn}/{DATABASES['bare']}")
    await bare_pg.execute(_BARE_TABLE)
    bare_insert = await bare_pg.prepare(_BARE_INSERT.format("$1", "$2"))
    bare_psycopg = await psycopg.AsyncConnection.connect(
        f"{a.dsn}/{DATABASES['bare']}", autocommit=True
    )
    nochecks = awa.AsyncClient(f"{a.dsn}/{DATABASES['nochecks']}")
    await nochecks.migrate()
    await nochecks.close()
    # asyncpg binds by position, and wants a list for text[]: the tags literal goes as text
    statement, order = _numbered(
        SQL["insert_job"].replace("%(tags)s::text[]", "%(tags)s::text::text[]")
    )
    params = single_params(NewJob(kind="bench", args={"seq": 0, "ts": 0.0}, queue="q"), None)
    values = [params[name] for name in order]
    ours_pg = await asyncpg.connect(f"{a.dsn}/{DATABASES['awa']}")
    ours_statement = await ours_pg.prepare(statement)
    nochecks_pg = await asyncpg.connect(f"{a.dsn}/{DATABASES['nochecks']}")
    await nochecks_pg.execute(_DROP_CHECKS)
    nochecks_statement = await nochecks_pg.prepare(statement)

    async def ours() -> None:
        if a.mode == "bulk":
            await client.insert_many(
                [awa.InsertSpec(args=BenchArgs(**p), queue="q") for p in payloads]
            )
        else:
            for p in payloads:
                await client.insert(BenchArgs(**p), queue="q")

    async def ours_ids() -> None:  # what pgqueuer's enqueue returns: the ids
        await client.insert_many(
            [awa.InsertSpec(args=BenchArgs(**p), queue="q") for p in payloads], returning="ids"
        )

    async def pgqueuer() -> None:
        if a.mode == "bulk":
            await queries.enqueue(
                ["bench"] * n, [json.dumps(p).encode() for p in payloads], [0] * n
            )
        else:
            for p in payloads:
                await queries.enqueue("bench", json.dumps(p).encode(), 0)

    async def asyncpg_bare() -> None:
        for p in payloads:
            await bare_insert.fetchval("bench", json.dumps(p))

    async def psycopg_bare() -> None:
        for p in payloads:
            cur = await bare_psycopg.execute(
                _BARE_INSERT.format("%s", "%s"), ("bench", json.dumps(p)), prepare=True
            )
            await cur.fetchone()

    async def statement_ours() -> None:
        for _ in payloads:
            await ours_statement.fetchrow(*values)

    async def statement_nochecks() -> None:
        for _ in payloads:
            await nochecks_statement.fetchrow(*values)

    runs: dict[str, Callable[[], Awaitable[None]]] = {
        "awa": ours,
        "pgqueuer": pgqueuer,
        "awa's statement alone, asyncpg": statement_ours,
        "awa's statement alone, asyncpg, no CHECKs": statement_nochecks,
        "bare INSERT, asyncpg": asyncpg_bare,
        "bare INSERT, psycopg": psycopg_bare,
    }
    if a.mode == "bulk":
        runs = {"awa": ours, "awa, returning ids": ours_ids, "pgqueuer": pgqueuer}
    for run in runs.values():  # warm up: connections opened, statements prepared
        for _ in range(3):
            await run()
    await asyncio.sleep(0.5)
    pids = {name: backends(a.dsn, DATABASES[_database_of(name)]) for name in runs}
    totals: dict[str, list[float]] = {name: [0.0, 0.0, 0.0] for name in runs}
    for _ in range(a.reps):
        for name, run in runs.items():
            b0 = sum(backend_cpu_s(p) for p in pids[name])
            c0, t0 = time.process_time(), time.perf_counter()
            await run()
            total = totals[name]
            total[0] += time.perf_counter() - t0
            total[1] += time.process_time() - c0
            total[2] += sum(backend_cpu_s(p) for p in pids[name]) - b0
    jobs = a.reps * n
    print(f"| {a.mode} | jobs/s | producer CPU us/job | backend CPU us/job | total |")
    print("|---|---:|---:|---:|---:|")
    for name, (wall, producer, backend) in totals.items():
        per = (producer / jobs * 1e6, backend / jobs * 1e6)
        print(f"| {name} | {jobs / wall:,.0f} | {per[0]:.1f} | {per[1]:.1f} | {sum(per):.1f} |")
    await pg_conn.close()
    await ours_pg.close()
    await nochecks_pg.close()
    await bare_pg.close()
    await bare_psycopg.close()
    await client.close()


def _database_of(run: str) -> str:
    if run.startswith("bare"):
        return "bare"
    if run.endswith("no CHECKs"):
        return "nochecks"
    return "pgqueuer" if run == "pgqueuer" else "awa"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--mode", choices=["bulk", "one"], default="bulk")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:55432")
    asyncio.run(measure(ap.parse_args()))


if __name__ == "__main__":
    main()
