"""The store's pool after its server refused connections for a while, and what a call that got
no pooled connection says.

A connection storm (a server out of connection slots, a database closed to new connections, a
restart) makes every connection attempt of the pool fail; psycopg_pool then retries with a
doubling backoff, 1, 2, 4, 8, 16 s, for up to 5 minutes. Once the server accepts connections
again the pool kept waiting out its backoff, up to 16 s, while a fresh client connected at
once, and the call that gave up meanwhile said "are all 10 connections in use?" when none
were. The storm here is a database closed to new connections (``ALLOW_CONNECTIONS false``)
with the store's sessions ended: what the server answers when it is out of slots, without
using them up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from awa.adapters.postgres import PostgresStore, migrate
from awa.adapters.postgres.migrations import MIGRATION_LOCK_KEY
from awa.domain import DatabaseError, NewJob

#: a short bound for the call that comes after the storm
CALL_TIMEOUT_S = 3.0
BOUNDS = {"connect_timeout_s": 2.0, "statement_timeout_s": 1.0, "call_timeout_s": CALL_TIMEOUT_S}


def until(condition: Callable[[], object], what: str, timeout_s: float) -> None:
    give_up = time.monotonic() + timeout_s
    pause = threading.Event()
    while not condition():
        assert time.monotonic() < give_up, f"{what}: not within {timeout_s}s"
        pause.wait(0.02)  # the poll period, not a synchronisation


@pytest.fixture
def database(create_database: Callable[[], str]) -> str:
    """A migrated database of its own, whose connections the test may close."""
    url = create_database()
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
    return url


@pytest.fixture
def admin(pg_server_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        yield conn


class Storm:
    """Closes ``database`` to new connections and ends its sessions; opens it again."""

    def __init__(self, admin: psycopg.Connection[Any], database: str) -> None:
        self.admin = admin
        self.name = sql.Identifier(conninfo_to_dict(database)["dbname"])
        self.dbname = conninfo_to_dict(database)["dbname"]

    def begin(self) -> None:
        self.admin.execute(
            sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(self.name)
        )
        self.admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            [self.dbname],
        )

    def end(self) -> None:
        self.admin.execute(
            sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS true").format(self.name)
        )


@pytest.fixture
def storm(admin: psycopg.Connection[Any], database: str) -> Iterator[Storm]:
    started = Storm(admin, database)
    yield started
    started.end()


def _failed_attempts(store: PostgresStore) -> int:
    return int(store.pool.get_stats().get("connections_errors", 0))


def _works(call: Callable[[], object]) -> bool:
    try:
        call()
    except DatabaseError:
        return False
    return True


def _pooled_call(store: PostgresStore) -> None:
    """A call that needs a connection of the pool (a health check opens one of its own when
    the pool has none to hand at once)."""
    store.count_jobs()


def _storm_breaks_the_pool(store: PostgresStore, storm: Storm, failures: int) -> None:
    """Begin the storm, let the store's one connection die, and wait for the pool's attempts to
    open a new one to fail ``failures`` times."""
    _pooled_call(store)
    storm.begin()
    assert not _works(lambda: _pooled_call(store))  # its connection ended: the pool opens another
    until(lambda: _failed_attempts(store) >= failures, f"{failures} failed attempts", 15.0)


def test_after_a_storm_the_pool_connects_again_without_waiting_out_its_backoff(
    database: str, storm: Storm
) -> None:
    with PostgresStore(database, pool_size=1, **BOUNDS) as store:
        # ... and fails three times, at 0, 1 and 3 s: psycopg_pool's own backoff would then
        # wait 4 s more (8 s after the next failure, 16 s after the one after that)
        _storm_breaks_the_pool(store, storm, 3)
        storm.end()
        store.insert([NewJob(kind="after_the_storm")])  # within CALL_TIMEOUT_S
        assert [job.kind for job in store.list_jobs()] == ["after_the_storm"]


def test_a_call_during_a_storm_says_the_server_refuses_new_connections(
    database: str, storm: Storm
) -> None:
    with PostgresStore(database, pool_size=1, **BOUNDS) as store:
        _storm_breaks_the_pool(store, storm, 1)
        with pytest.raises(DatabaseError) as raised:
            _pooled_call(store)
    message = str(raised.value)
    assert message.startswith(
        f"counting jobs failed: no connection from the pool within {CALL_TIMEOUT_S:g}s:"
        " the server refuses new connections: cannot connect to PostgreSQL at "
    )
    assert "is not currently accepting connections" in message  # the server's reason


def test_a_call_that_found_every_connection_in_use_says_so(
    database: str, admin: psycopg.Connection[Any]
) -> None:
    """Its one connection is taken by a migration waiting for another migrator's lock (a
    migration is not bounded by the call timeout)."""
    with (
        PostgresStore(database, pool_size=1, **BOUNDS) as store,
        psycopg.connect(database) as other,
    ):
        _pooled_call(store)
        other.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        migrating = threading.Thread(target=store.migrate)
        migrating.start()
        try:
            until(lambda: _waiting_for_a_lock(admin, database), "the migration waits", 10.0)
            with pytest.raises(DatabaseError) as raised:
                _pooled_call(store)
        finally:
            other.commit()
            migrating.join()
    assert str(raised.value) == (
        f"counting jobs failed: no connection from the pool within {CALL_TIMEOUT_S:g}s:"
        " all 1 of its connections were in use"
    )


def test_a_pool_still_in_its_backoff_is_told_apart_from_one_in_use(
    database: str, storm: Storm
) -> None:
    """A pool you pass in keeps psycopg_pool's own backoff: once the storm is over it may still
    be waiting to try again, and the call that gave up says so, not that its connections were
    in use."""
    with ConnectionPool(
        database, min_size=1, max_size=1, kwargs={"autocommit": True}, timeout=2.0
    ) as pool:
        pool.wait()
        with PostgresStore(pool, **BOUNDS) as store:
            _storm_breaks_the_pool(store, storm, 3)  # at 0, 1 and 3 s; the next at 7 s
            storm.end()
            with pytest.raises(DatabaseError) as raised:
                _pooled_call(store)
    assert str(raised.value).startswith(
        "counting jobs failed: no connection from the pool within 2s: 0 of its 1"
        " connections were in use, and it was still opening the others again after failed"
        " attempts ("
    )
    assert str(raised.value).endswith("so far), though a new connection succeeds now")


def _waiting_for_a_lock(admin: psycopg.Connection[Any], database: str) -> bool:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
        [conninfo_to_dict(database)["dbname"]],
    ).fetchone()
    return bool(row and row[0])


def test_one_call_on_a_dead_connection_replaces_its_idle_siblings(
    database: str, admin: psycopg.Connection[Any]
) -> None:
    """A restart ends every session: before, each idle connection the pool held failed one call
    in turn (a worker's claim, retried with a growing backoff, took 1+2+4+... s to come back);
    now the first call that finds its connection dead has the others replaced."""
    with PostgresStore(database, pool_size=4, **BOUNDS) as store:
        pool = store.pool
        held = [pool.getconn(timeout=5) for _ in range(4)]  # four connections, all opened
        for conn in held:
            pool.putconn(conn)
        until(lambda: pool.get_stats().get("pool_available", 0) == 4, "4 idle connections", 5)
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (conninfo_to_dict(database)["dbname"],),
        )
        with pytest.raises(DatabaseError):
            store.insert([NewJob(kind="k")])  # the first call meets a dead connection
        for _ in range(4):  # and no later one does
            store.insert([NewJob(kind="k")])
