"""Schema migrations of the SQLite adapter: numbered ``migrations/NNNN_name.sql`` files and a
version ledger (``awa_schema_version``).

``migrate`` runs under ``BEGIN IMMEDIATE``, so processes opening one file at once take turns
(the later ones find nothing to do); it is idempotent, all or nothing, and refuses a database
that a newer awa migrated. SQLite runs DDL inside a transaction, so a failed migration leaves
the file as it was.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from awa.adapters._schema import Migration, check_version, load_migrations, newer_than_code
from awa.adapters.sqlite._rows import micros
from awa.adapters.sqlite._sql import SQL

__all__ = ["LATEST_VERSION", "MIGRATIONS", "check_schema", "migrate", "schema_version"]


def statements(migration: Migration) -> list[str]:
    """A migration file's statements, one by one: ``executescript`` would commit on its own."""
    found, pending = [], ""
    for line in migration.sql.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            found.append(pending.strip())
            pending = ""
    if pending.strip() and not all(
        line.strip().startswith("--") or not line.strip() for line in pending.splitlines()
    ):
        raise RuntimeError(f"migration {migration.version} ends inside a statement")
    return found


MIGRATIONS = load_migrations("awa.adapters.sqlite")
LATEST_VERSION = MIGRATIONS[-1].version


def schema_version(conn: sqlite3.Connection) -> int | None:
    """The newest migration applied, or ``None`` for a file awa never migrated."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'awa_schema_version'"
    ).fetchone()
    if exists is None:
        return None
    row = conn.execute(SQL["schema_version"]).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def check_schema(conn: sqlite3.Connection) -> int:
    """Raise ``SchemaNotMigrated`` unless the file is at ``LATEST_VERSION`` or newer (a newer
    schema keeps older code working while processes are upgraded one by one; only
    ``migrate`` refuses it)."""
    return check_version(schema_version(conn), LATEST_VERSION)


def migrate(conn: sqlite3.Connection, now: datetime) -> list[int]:
    """Apply every pending migration in one transaction; returns the versions applied.
    ``conn`` is in autocommit mode (``isolation_level=None``) and not inside a transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(SQL["create_ledger"])
        current = schema_version(conn) or 0
        if current > LATEST_VERSION:
            raise newer_than_code(current, LATEST_VERSION)
        applied = []
        for migration in MIGRATIONS[current:]:
            for statement in statements(migration):
                conn.execute(statement)
            conn.execute(
                SQL["record_migration"],
                {
                    "version": migration.version,
                    "name": migration.name,
                    "checksum": migration.checksum,
                    "applied_at": micros(now),
                },
            )
            applied.append(migration.version)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return applied
