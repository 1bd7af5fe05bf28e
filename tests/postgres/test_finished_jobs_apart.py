"""Finished jobs live apart (migration 0010): which partition of awa.jobs holds a job as it
moves through its lifecycle, and the upgrade of a database that already holds jobs.

awa.jobs_hot holds what workers and maintenance touch, plus the finished jobs that still hold
their unique key; awa.jobs_done holds the other finished jobs (awa.job_home)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore, migrate
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.migrations import MIGRATIONS
from awa.domain import Complete, Fail, JobState, NewJob, Unique, UniqueConflict
from awa.ports import Finish
from tests.pg_fixtures import migrate_before

APART = next(m for m in MIGRATIONS if m.name == "finished_jobs_apart")


def _home(url: str, job_id: int) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT tableoid::regclass::text FROM awa.jobs WHERE id = %s", [job_id]
        ).fetchone()
    assert row is not None, f"job {job_id} is in no partition"
    return str(row[0])


def _running(store: PostgresStore, **fields: Any) -> Any:
    store.insert([NewJob(kind="k", **fields)])
    [job] = store.claim("default", limit=1)
    return job


def test_a_job_is_hot_until_it_finishes_and_comes_back_when_retried(
    pg_clean_url: str, clock: ManualClock
) -> None:
    with PostgresStore(pg_clean_url, clock=clock) as store:
        [scheduled] = store.insert([NewJob(kind="k", run_at=clock.now().replace(year=2100))])
        done = _running(store)
        assert _home(pg_clean_url, scheduled.id) == "awa.jobs_hot"
        assert _home(pg_clean_url, done.id) == "awa.jobs_hot"
        store.finish([Finish(done.lease, Complete())])  # the hot path: complete_many.sql
        assert _home(pg_clean_url, done.id) == "awa.jobs_done"
        failed = _running(store)
        store.finish([Finish(failed.lease, Fail("no", terminal=True))])  # the general path
        assert _home(pg_clean_url, failed.id) == "awa.jobs_done"
        assert store.retry(failed.id).state is JobState.AVAILABLE
        assert _home(pg_clean_url, failed.id) == "awa.jobs_hot"
        store.cancel(scheduled.id)
        assert _home(pg_clean_url, scheduled.id) == "awa.jobs_done"
        assert store.count_jobs() == 3
        assert [j.id for j in store.list_jobs(state=JobState.COMPLETED)] == [done.id]
        assert store.get_job(scheduled.id).state is JobState.CANCELLED


def test_a_finished_job_that_keeps_its_key_stays_hot_and_still_refuses_duplicates(
    pg_clean_url: str, clock: ManualClock
) -> None:
    keeps = Unique()  # completed is among the default states
    with PostgresStore(pg_clean_url, clock=clock) as store:
        job = _running(store, unique=keeps)
        store.finish([Finish(job.lease, Complete())])
        assert _home(pg_clean_url, job.id) == "awa.jobs_hot"
        with pytest.raises(UniqueConflict):
            store.insert([NewJob(kind="k", unique=keeps)])
        [held] = store.insert([NewJob(kind="k", unique=keeps)], on_conflict="skip")
        assert (held.id, held.state) == (job.id, JobState.COMPLETED)  # the holder answers


def test_a_retried_job_takes_its_key_back_from_the_done_partition_only_when_free(
    pg_clean_url: str, clock: ManualClock
) -> None:
    once = Unique()  # failed is not among its states: a failed job lets its key go
    with PostgresStore(pg_clean_url, clock=clock) as store:
        failed = _running(store, unique=once)
        store.finish([Finish(failed.lease, Fail("x", terminal=True))])
        assert _home(pg_clean_url, failed.id) == "awa.jobs_done"
        [duplicate] = store.insert([NewJob(kind="k", unique=once)])
        with pytest.raises(UniqueConflict):
            store.retry(failed.id)
        assert _home(pg_clean_url, failed.id) == "awa.jobs_done"
        store.cancel(duplicate.id)
        assert store.retry(failed.id).state is JobState.AVAILABLE
        assert _home(pg_clean_url, failed.id) == "awa.jobs_hot"


def test_retention_deletes_finished_jobs_from_the_done_partition(
    pg_clean_url: str, clock: ManualClock
) -> None:
    with PostgresStore(pg_clean_url, clock=clock) as store:
        jobs = [_running(store) for _ in range(3)]
        store.finish([Finish(job.lease, Complete()) for job in jobs])
        clock.advance(3600)
        assert store.delete_finished(older_than_s=60, limit=2) == 2
        assert store.delete_finished(older_than_s=60, limit=2) == 1
        assert store.count_jobs() == 0


_ADD_JOB = """
INSERT INTO awa.jobs (kind, queue, state, run_at, created_at, finalized_at, unique_key,
                      unique_states)
VALUES ('chore', 'chores', %(state)s, now(), now(),
        CASE WHEN %(state)s IN ('completed', 'failed', 'cancelled') THEN now() END,
        %(key)s, %(states)s)
RETURNING id
"""


def test_the_upgrade_moves_finished_jobs_apart_and_keeps_ids_and_keys(
    empty_database: str,
) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        migrate_before(conn, APART.version)

        def add(state: str, key: str | None = None, states: int | None = None) -> int:
            row = conn.execute(_ADD_JOB, {"state": state, "key": key, "states": states})
            found = row.fetchone()
            assert found is not None
            return int(found[0])

        live = {state: add(state) for state in ("available", "scheduled", "running")}
        done = {state: add(state) for state in ("completed", "failed", "cancelled")}
        key = Unique().digest("chore", "chores", {})
        holder = add("completed", key, 32 | 2)  # completed is among its states
        released = add("cancelled", "another-key", 2)
        dead = add("failed")
        conn.execute(
            "WITH moved AS (DELETE FROM awa.jobs WHERE id = %s RETURNING *)"
            " INSERT INTO awa.dlq (id, kind, queue, state, run_at, created_at, finalized_at,"
            " dlq_reason, dlq_at)"
            " SELECT id, kind, queue, state, run_at, created_at, finalized_at, 'gone', now()"
            " FROM moved",
            [dead],
        )
        assert migrate(conn) == [m.version for m in MIGRATIONS if m.version >= APART.version]
        homes = dict(conn.execute("SELECT id, tableoid::regclass::text FROM awa.jobs").fetchall())
    assert {homes[i] for i in live.values()} == {"awa.jobs_hot"}
    assert {homes[i] for i in done.values()} == {"awa.jobs_done"}
    assert homes[holder] == "awa.jobs_hot"
    assert homes[released] == "awa.jobs_done"
    assert dead not in homes
    with PostgresStore(empty_database) as store:
        # ids carry on past every id handed out before, the dead-letter queue's included
        [new] = store.insert([NewJob(kind="k", queue="chores")])
        assert new.id > dead
        with pytest.raises(UniqueConflict):
            store.insert([NewJob(kind="chore", queue="chores", unique=Unique())])
        assert store.count_jobs() == 9
        assert store.get_job(dead).state is JobState.FAILED  # from awa.dlq, as before
        assert store.cancel(live["available"]).state is JobState.CANCELLED
    with psycopg.connect(empty_database) as conn:
        assert conn.execute("SELECT count(*) FROM awa.jobs_done").fetchone() == (5,)


# -- no statement reads the done partition without an index ----------------------------------

#: whole-table counts an operator asks for: they read every row by design (the queue summary's
#: count_queue_states does not since migration 0011: test_finished_counts.py)
_COUNTS_EVERY_JOB = {"count_jobs", "queue_stats"}

_NOW = datetime(2030, 1, 1, tzinfo=timezone.utc)
#: a value for each parameter name; an array parameter gets a one-element list of it
_SAMPLES: dict[str, Any] = {
    "after_id": 0,
    "aging_us": 1_000,
    "args": "{}",
    "attempt": 1,
    "before_id": None,
    "callback_id": "c",
    "count": 1,
    "created_at": _NOW,
    "deadline": timedelta(minutes=5),
    "errors": "[]",
    "exact_max": 50_000,
    "expected_next": _NOW,
    "following": _NOW,
    "id": 1,
    "ids": 1,
    "jobs": "[]",
    "key": "k",
    "kind": "k",
    "last_fire": _NOW,
    "leases": 1,
    "limit": 10,
    "max_attempts": 3,
    "may_repeat": False,
    "metadata": "{}",
    "name": "n",
    "older_than": timedelta(days=1),
    "priority": 2,
    "queue": "q",
    "reasons": "r",
    "run_at": _NOW,
    "run_lease": 1,
    "since": _NOW,
    "skip_held": False,
    "staleness": timedelta(seconds=90),
    "state": "failed",
    "states": "failed",
    "tag": "t",
    "tags": "[]",
}
_PARAM = re.compile(r"%\((\w+)\)s(::[\w\[\]]+)?")


def _params(sql: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for match in _PARAM.finditer(sql):
        name, cast = match.group(1), match.group(2) or ""
        value = _SAMPLES.get(name)
        params[name] = [value] if cast.endswith("[]") else params.get(name, value)
    return params


def test_no_statement_reads_the_done_partition_without_an_index(pg_clean_url: str) -> None:
    """awa.jobs_done holds a day of history: a statement that finds no index there reads all
    of it. With sequential scans priced out, any that remains is one no index can replace (as
    happened to the callback lookups until they read awa.jobs_hot, where callback ids live)."""
    scanned: dict[str, list[str]] = {}
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        cur = psycopg.ClientCursor(conn)
        for name, sql in sorted(SQL.items()):
            if "awa.jobs" not in sql or sql.lstrip().startswith("COPY"):
                continue
            with conn.transaction(force_rollback=True):
                cur.execute("EXPLAIN " + sql, _params(sql))
                plan = [str(row[0]) for row in cur.fetchall()]
            scanned[name] = [line.strip() for line in plan if "Seq Scan on jobs_done" in line]
    assert len(scanned) >= 29  # every statement on awa.jobs was planned
    assert {name for name, seq in scanned.items() if seq} <= _COUNTS_EVERY_JOB, scanned
