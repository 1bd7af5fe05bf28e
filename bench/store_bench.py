"""Store-level throughput on a real PostgreSQL: insert (one by one and batched, each with and
without a unique key, alternating in the same run) and claim + complete for several batch
sizes, with the cost per job in commits and WAL bytes.

    python bench/store_bench.py postgresql://user@host:port/dbname [--jobs 20000] [--inserts-only]

The database is migrated if needed and the awa tables are emptied before each measurement: do
not point this at a database whose jobs you want to keep. For figures worth quoting, run it
against a server with fsync on and the default synchronous_commit.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import psycopg

from awa.adapters.postgres import PostgresStore
from awa.domain import Complete, NewJob, Unique
from awa.ports import BATCH_SIZE_MAX, Finish

QUEUE = "bench"


def _counters(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """(committed transactions in this database, WAL position in bytes)."""
    row = conn.execute(
        "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),"
        " pg_current_wal_lsn() - '0/0'::pg_lsn"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _measure(
    admin: psycopg.Connection[Any], label: str, jobs: int, work: Callable[[], None]
) -> dict[str, float]:
    admin.execute("SELECT pg_stat_clear_snapshot()")
    commits0, wal0 = _counters(admin)
    started = time.perf_counter()
    work()
    elapsed = time.perf_counter() - started
    time.sleep(1.2)  # backends flush their statistics at most once a second
    admin.execute("SELECT pg_stat_clear_snapshot()")
    commits1, wal1 = _counters(admin)
    row = {
        "jobs_per_s": jobs / elapsed,
        "commits_per_job": (commits1 - commits0) / jobs,
        "wal_bytes_per_job": (wal1 - wal0) / jobs,
    }
    print(
        f"{label:<34} {row['jobs_per_s']:>10,.0f} jobs/s"
        f"  {row['commits_per_job']:>7.3f} commits/job"
        f"  {row['wal_bytes_per_job']:>8,.0f} WAL B/job",
        flush=True,
    )
    return row


def _reset(admin: psycopg.Connection[Any]) -> None:
    admin.execute("TRUNCATE awa.jobs, awa.dlq, awa.queues, awa.schedules RESTART IDENTITY")
    admin.execute("CHECKPOINT")


#: the unique insert measured: every job its own key (by its args), none conflicting
UNIQUE = Unique(by_args=True)
#: rounds of each insert measurement, alternating with and without unique, for a median
INSERT_ROUNDS = 3


def _new_job(n: int, unique: bool) -> NewJob:
    return NewJob(kind="noop", queue=QUEUE, args={"n": n}, unique=UNIQUE if unique else None)


def _fill(store: PostgresStore, jobs: int, unique: bool = False) -> None:
    for start in range(0, jobs, BATCH_SIZE_MAX):
        count = min(BATCH_SIZE_MAX, jobs - start)
        store.insert([_new_job(start + i, unique) for i in range(count)])


def _one_by_one(store: PostgresStore, jobs: int, unique: bool) -> None:
    for n in range(jobs):
        store.insert([_new_job(n, unique)])


def _inserts(admin: psycopg.Connection[Any], store: PostgresStore, jobs: int, single: int) -> None:
    """Each insert with and without a unique key, alternating, ``INSERT_ROUNDS`` times; the
    medians and the ratio close the section."""
    rates: dict[str, list[float]] = {}
    for _ in range(INSERT_ROUNDS):
        for unique in (False, True):
            label = "unique" if unique else "plain"
            _reset(admin)
            one = _measure(
                admin,
                f"insert one by one ({single}), {label}",
                single,
                lambda unique=unique: _one_by_one(store, single, unique),
            )
            _reset(admin)
            batched = _measure(
                admin,
                f"insert batched ({BATCH_SIZE_MAX}/call), {label}",
                jobs,
                lambda unique=unique: _fill(store, jobs, unique),
            )
            rates.setdefault(f"one by one, {label}", []).append(one["jobs_per_s"])
            rates.setdefault(f"batched, {label}", []).append(batched["jobs_per_s"])
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, rate in medians.items():
        print(f"median {name:<28} {rate:>10,.0f} jobs/s")
    for way in ("one by one", "batched"):
        ratio = medians[f"{way}, unique"] / medians[f"{way}, plain"]
        print(f"unique / plain, {way}: {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--insert-one-by-one", type=int, default=2_000)
    parser.add_argument("--inserts-only", action="store_true", help="skip claim + complete")
    options = parser.parse_args()
    jobs: int = options.jobs

    with (
        PostgresStore(options.url, pool_size=2) as store,
        psycopg.connect(options.url, autocommit=True) as admin,
    ):
        store.migrate()
        server = admin.execute(
            "SELECT current_setting('server_version'), current_setting('fsync'),"
            " current_setting('synchronous_commit')"
        ).fetchone()
        print(f"PostgreSQL {server[0]}, fsync={server[1]}, synchronous_commit={server[2]}")  # type: ignore[index]

        _inserts(admin, store, jobs, options.insert_one_by_one)
        if options.inserts_only:
            return

        for batch in (1, 10, 100, 1000):
            _reset(admin)
            _fill(store, jobs)
            admin.execute("VACUUM ANALYZE awa.jobs")

            def claim_and_complete(batch: int = batch) -> None:
                done = 0
                while claimed := store.claim(QUEUE, limit=batch):
                    results = store.finish([Finish(job.lease, Complete()) for job in claimed])
                    done += len(results)
                assert done == jobs, f"completed {done} of {jobs}"

            _measure(admin, f"claim+complete batch {batch}", jobs, claim_and_complete)


if __name__ == "__main__":
    main()
