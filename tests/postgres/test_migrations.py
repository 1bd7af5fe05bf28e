"""Migrations: idempotent, safe when two run at once, refusing a newer schema; an unmigrated
database names the command that fixes it."""

from __future__ import annotations

import threading

import psycopg
import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import (
    LATEST_VERSION,
    PostgresStore,
    SchemaNewerThanCode,
    migrate,
    schema_version,
)
from awa.adapters.postgres.migrations import MIGRATIONS
from awa.domain import NewJob, SchemaNotMigrated


def _ledger(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT version, name FROM awa.schema_version ORDER BY version")
        return [(version, name) for version, name in rows.fetchall()]


def test_migrate_applies_every_migration_once_and_a_rerun_does_nothing(
    empty_database: str,
) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        assert schema_version(conn) is None
        assert migrate(conn) == [m.version for m in MIGRATIONS]
        assert migrate(conn) == []
        assert schema_version(conn) == LATEST_VERSION
    assert _ledger(empty_database) == [(m.version, m.name) for m in MIGRATIONS]


def test_store_migrate_is_the_same_command(empty_database: str) -> None:
    with PostgresStore(empty_database, clock=ManualClock()) as store:
        assert store.migrate() == [m.version for m in MIGRATIONS]
        assert store.migrate() == []
        assert store.insert([NewJob(kind="k")])[0].id == 1


def test_two_migrators_at_once_apply_each_migration_exactly_once(empty_database: str) -> None:
    start = threading.Barrier(2)
    results: list[list[int]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with psycopg.connect(empty_database, autocommit=True) as conn:
                start.wait()
                results.append(migrate(conn))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(results, key=len) == [[], [m.version for m in MIGRATIONS]]
    assert _ledger(empty_database) == [(m.version, m.name) for m in MIGRATIONS]


def test_migrate_refuses_a_schema_newer_than_the_code(empty_database: str) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        migrate(conn)
        conn.execute(
            "INSERT INTO awa.schema_version (version, name, checksum) VALUES (%s, 'future', '')",
            (LATEST_VERSION + 1,),
        )
        with pytest.raises(SchemaNewerThanCode, match="upgrade awa"):
            migrate(conn)
        assert schema_version(conn) == LATEST_VERSION + 1


def test_an_unmigrated_database_says_which_command_to_run(empty_database: str) -> None:
    with PostgresStore(empty_database, clock=ManualClock()) as store:
        with pytest.raises(SchemaNotMigrated) as raised:
            store.insert([NewJob(kind="k")])
        message = str(raised.value)
        assert "awa migrate" in message
        assert "store.migrate()" in message
        with pytest.raises(SchemaNotMigrated):
            store.claim("default", limit=1)


def test_a_half_migrated_database_is_not_migrated(empty_database: str) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA awa")
        conn.execute(
            "CREATE TABLE awa.schema_version (version int PRIMARY KEY, name text NOT NULL,"
            " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
    with PostgresStore(empty_database) as store, pytest.raises(SchemaNotMigrated, match="migrate"):
        store.list_jobs()
