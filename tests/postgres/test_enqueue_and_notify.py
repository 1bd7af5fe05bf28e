"""Transactional enqueue on the caller's connection, wake-ups and cancel signals, database
time, and connection loss."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from awa.adapters.postgres import (
    CANCEL_CHANNEL,
    WAKEUP_CHANNEL,
    PostgresStore,
    insert_jobs,
    insert_jobs_async,
)
from awa.domain import DatabaseError, JobNotFound, JobState, NewJob


def _notifications(conn: psycopg.Connection[object]) -> list[tuple[str, str]]:
    return [(n.channel, n.payload) for n in conn.notifies(timeout=0.5, stop_after=10)]


def test_enqueue_on_a_callers_connection_commits_with_the_callers_transaction(
    pg_url: str, make_store: Callable[..., PostgresStore]
) -> None:
    store = make_store()
    with psycopg.connect(pg_url) as conn:  # not autocommit: the caller's transaction
        conn.execute("SELECT 1")  # the caller's own work in the same transaction
        [job] = insert_jobs(conn, [NewJob(kind="email", queue="mail")])
        with pytest.raises(JobNotFound):
            store.get_job(job.id)  # not visible before the caller commits
        conn.commit()
    assert store.get_job(job.id).state is JobState.AVAILABLE
    assert [j.id for j in store.claim("mail", limit=5)] == [job.id]


def test_enqueue_on_a_callers_connection_vanishes_on_rollback(
    pg_url: str, make_store: Callable[..., PostgresStore]
) -> None:
    store = make_store()
    with psycopg.connect(pg_url) as conn:
        [job] = insert_jobs(conn, [NewJob(kind="email", queue="mail")])
        conn.rollback()
    with pytest.raises(JobNotFound):
        store.get_job(job.id)
    assert store.claim("mail", limit=5) == []


def test_async_enqueue_commits_and_rolls_back_with_the_callers_transaction(
    pg_url: str, make_store: Callable[..., PostgresStore]
) -> None:
    store = make_store()

    async def scenario() -> tuple[int, int]:
        async with await psycopg.AsyncConnection.connect(pg_url) as conn:
            [kept] = await insert_jobs_async(conn, [NewJob(kind="a", queue="mail")])
            await conn.commit()
            [dropped] = await insert_jobs_async(conn, [NewJob(kind="a", queue="mail")])
            await conn.rollback()
            return kept.id, dropped.id

    kept, dropped = asyncio.run(scenario())
    assert store.get_job(kept).state is JobState.AVAILABLE
    with pytest.raises(JobNotFound):
        store.get_job(dropped)


def test_insert_wakes_each_queue_on_commit_only(
    pg_url: str, make_store: Callable[..., PostgresStore]
) -> None:
    store = make_store()
    with psycopg.connect(pg_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {WAKEUP_CHANNEL}")
        with psycopg.connect(pg_url) as conn:
            insert_jobs(conn, [NewJob(kind="a", queue="q1")])
            conn.rollback()
        assert _notifications(listener) == []
        store.insert([NewJob(kind="a", queue="q1"), NewJob(kind="a", queue="q2")] * 3)
        later = datetime.now(timezone.utc) + timedelta(hours=1)
        store.insert([NewJob(kind="a", queue="q3", run_at=later)])  # scheduled: nothing to do
        assert sorted(_notifications(listener)) == [
            (WAKEUP_CHANNEL, "q1"),
            (WAKEUP_CHANNEL, "q2"),
        ]


def test_cancel_of_a_running_job_signals_its_worker_with_the_lease(
    pg_url: str, make_store: Callable[..., PostgresStore]
) -> None:
    store = make_store()
    store.insert([NewJob(kind="a"), NewJob(kind="a")])
    [running] = store.claim("default", limit=1)
    with psycopg.connect(pg_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {CANCEL_CHANNEL}")
        store.cancel(running.id)
        store.cancel(running.id + 1)  # available: no worker to tell
        [(channel, payload)] = _notifications(listener)
    assert channel == CANCEL_CHANNEL
    assert json.loads(payload) == {"id": running.id, "run_lease": running.run_lease}


def test_without_a_clock_the_database_tells_the_time(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()  # clock=None
    before = datetime.now(timezone.utc) - timedelta(seconds=5)
    soon = datetime.now(timezone.utc) + timedelta(hours=1)
    [now_job, later_job] = store.insert([NewJob(kind="a"), NewJob(kind="a", run_at=soon)])
    assert now_job.state is JobState.AVAILABLE
    assert later_job.state is JobState.SCHEDULED
    [claimed] = store.claim("default", limit=5, deadline_duration_s=60)
    assert claimed.attempted_at is not None
    assert claimed.attempted_at > before
    assert claimed.deadline_at == claimed.attempted_at + timedelta(seconds=60)
    assert claimed.attempted_at.tzinfo is timezone.utc


def test_losing_the_connection_is_a_database_error_and_the_store_recovers(
    pg_url: str, pg_server_url: str
) -> None:
    url = psycopg.conninfo.make_conninfo(pg_url, application_name="awa-loss-test")
    with PostgresStore(url, pool_size=1) as store:
        store.list_jobs()
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = 'awa-loss-test'"
            ).fetchone()
            assert killed == (1,)
        with pytest.raises(DatabaseError) as raised:
            store.list_jobs()
        assert isinstance(raised.value.__cause__, psycopg.OperationalError)
        assert isinstance(store.list_jobs(), list)  # the pool replaced the broken connection


def test_an_unreachable_server_is_a_database_error() -> None:
    pool: ConnectionPool[Any] = ConnectionPool(
        "postgresql://nobody@127.0.0.1:1/nowhere?connect_timeout=1", timeout=1, open=True
    )
    try:
        with pytest.raises(DatabaseError, match="failed") as raised:
            PostgresStore(pool).list_jobs()
        assert isinstance(raised.value.__cause__, psycopg.OperationalError)
    finally:
        pool.close()
