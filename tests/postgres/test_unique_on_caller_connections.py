"""Unique jobs on every kind of connection an application holds: a key already held is refused
(or skipped) without spoiling the caller's transaction, and a key another transaction commits
while the caller's insert waits on it costs that insert a savepoint, not the transaction."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

import awa
from awa.adapters.postgres import insert_jobs
from awa.domain import NewJob, Unique
from tests.postgres.test_caller_connections import _as_url, _configure_django, _sqlalchemy_url

BOUND_S = 10.0  # a failure detector for waits, not a timing claim


@dataclass
class Report:
    day: int


UNIQUE = Unique()


# -- a transaction of the application's, per driver: yields its connection ------------------------


@contextmanager
def psycopg_tx(url: str) -> Iterator[Any]:
    with psycopg.connect(url) as conn:  # not autocommit: psycopg begins on the first statement
        yield conn
        conn.commit()


@contextmanager
def sqlalchemy_session_tx(url: str) -> Iterator[Any]:
    import sqlalchemy
    from sqlalchemy.orm import Session

    engine = sqlalchemy.create_engine(_sqlalchemy_url(url, "psycopg"))
    try:
        with Session(engine) as session:
            yield session
            session.commit()
    finally:
        engine.dispose()


@contextmanager
def django_tx(url: str) -> Iterator[Any]:
    _configure_django(url)
    from django.db import connection, transaction

    try:
        with transaction.atomic():
            yield connection
    finally:
        connection.close()


@asynccontextmanager
async def psycopg_async_tx(url: str) -> AsyncIterator[Any]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        yield conn
        await conn.commit()


@asynccontextmanager
async def asyncpg_tx(url: str) -> AsyncIterator[Any]:
    import asyncpg

    conn = await asyncpg.connect(_as_url(url))
    try:
        async with conn.transaction():
            yield conn
    finally:
        await conn.close()


@asynccontextmanager
async def sqlalchemy_async_session_tx(url: str) -> AsyncIterator[Any]:
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    engine = create_async_engine(_sqlalchemy_url(url, "asyncpg"))
    try:
        async with AsyncSession(engine) as session:
            yield session
            await session.commit()
    finally:
        await engine.dispose()


SYNC: dict[str, Callable[[str], Any]] = {
    "psycopg": psycopg_tx,
    "sqlalchemy-session": sqlalchemy_session_tx,
    "django": django_tx,
}
ASYNC: dict[str, Callable[[str], Any]] = {
    "psycopg-async": psycopg_async_tx,
    "asyncpg": asyncpg_tx,
    "sqlalchemy-async-session": sqlalchemy_async_session_tx,
}


def _run(driver: str, url: str, steps: Callable[[Callable[..., Any]], Any]) -> Any:
    """``steps(insert)`` inside a transaction of ``driver``'s, committed after them;
    ``insert(args, **options)`` inserts on that transaction's connection (and returns a
    coroutine for the asyncio drivers: ``steps`` is then a coroutine function)."""
    if driver in SYNC:
        with awa.Client(url) as client, SYNC[driver](url) as conn:
            return steps(lambda args, **options: client.insert(args, conn=conn, **options))

    async def main() -> Any:
        async with awa.AsyncClient(url) as client, ASYNC[driver](url) as conn:
            return await steps(lambda args, **options: client.insert(args, conn=conn, **options))

    return asyncio.run(main())


# -- a key already held ------------------------------------------------------------------------


@pytest.mark.parametrize("driver", [*SYNC, *ASYNC])
def test_a_held_key_is_refused_or_skipped_and_the_callers_transaction_goes_on(
    driver: str, pg_clean_url: str
) -> None:
    with awa.Client(pg_clean_url) as client:
        holder = client.insert(Report(7), unique=UNIQUE)

    def steps(insert: Callable[..., Any]) -> tuple[int, int, Any]:
        with pytest.raises(awa.UniqueConflict) as refused:
            insert(Report(7), unique=UNIQUE)
        skipped = insert(Report(7), unique=UNIQUE, on_conflict="skip")
        # the transaction is still usable: a new key goes in, inside it
        other = insert(Report(8), unique=UNIQUE)
        return refused.value.job_id, skipped.id, other

    async def steps_async(insert: Callable[..., Any]) -> tuple[int, int, Any]:
        with pytest.raises(awa.UniqueConflict) as refused:
            await insert(Report(7), unique=UNIQUE)
        skipped = await insert(Report(7), unique=UNIQUE, on_conflict="skip")
        other = await insert(Report(8), unique=UNIQUE)
        return refused.value.job_id, skipped.id, other

    refused_by, skipped_id, other = _run(
        driver, pg_clean_url, steps if driver in SYNC else steps_async
    )
    assert (refused_by, skipped_id) == (holder.id, holder.id)
    with awa.Client(pg_clean_url) as client:
        assert {j.id for j in client.list_jobs()} == {holder.id, other.id}  # committed


# -- a key committed by another transaction while the caller's insert waits on it --------------


def _waiting_on_a_lock(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchone()
    return row is not None and row[0] > 0


@contextmanager
def _rival_holding_the_key(url: str) -> Iterator[Callable[[], int]]:
    """A transaction that has inserted the unique job and not committed yet; calling the
    yielded function commits it (after the caller's insert is seen waiting on the key) and
    returns the rival job's id."""
    rival = psycopg.connect(url)
    try:
        [job] = insert_jobs(rival, [NewJob(kind="report", args={"day": 7}, unique=UNIQUE)])

        def commit_when_blocked() -> int:
            for _ in range(int(BOUND_S / 0.05)):
                if _waiting_on_a_lock(url):
                    break
                threading.Event().wait(0.05)
            else:
                raise AssertionError("the caller's insert never waited on the key")
            rival.commit()
            return job.id

        yield commit_when_blocked
    finally:
        rival.close()


@pytest.mark.parametrize("driver", [*SYNC, *ASYNC])
def test_a_key_committed_meanwhile_costs_the_insert_a_savepoint_not_the_transaction(
    driver: str, pg_clean_url: str
) -> None:
    with _rival_holding_the_key(pg_clean_url) as commit_when_blocked:
        committed: list[int] = []
        committer = threading.Thread(target=lambda: committed.append(commit_when_blocked()))
        committer.start()

        # each insert of the key blocks on the rival's uncommitted one, fails with
        # unique_violation when it commits, runs again in a fresh savepoint, sees the holder
        def steps(insert: Callable[..., Any]) -> tuple[int, Any]:
            with pytest.raises(awa.UniqueConflict) as refused:
                insert(Report(7), unique=UNIQUE)
            return refused.value.job_id, insert(Report(9))

        async def steps_async(insert: Callable[..., Any]) -> tuple[int, Any]:
            with pytest.raises(awa.UniqueConflict) as refused:
                await insert(Report(7), unique=UNIQUE)
            return refused.value.job_id, await insert(Report(9))

        refused_by, after = _run(driver, pg_clean_url, steps if driver in SYNC else steps_async)
        committer.join(BOUND_S)
    assert committed == [refused_by]
    with awa.Client(pg_clean_url) as client:
        assert {j.id for j in client.list_jobs()} == {refused_by, after.id}
