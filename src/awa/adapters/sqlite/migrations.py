"""Schema migrations of the SQLite adapter: numbered ``migrations/NNNN_name.sql`` files and a
version ledger (``awa_schema_version``).

``migrate`` runs under ``BEGIN IMMEDIATE``, so processes opening one file at once take turns
(the later ones find nothing to do); it is idempotent, all or nothing, and refuses a database
that a newer awa migrated. SQLite runs DDL inside a transaction, so a failed migration leaves
the file as it was.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from datetime import datetime
from importlib import resources

import attrs

from awa.adapters.sqlite._errors import SchemaNewerThanCode, not_migrated
from awa.adapters.sqlite._rows import micros
from awa.adapters.sqlite._sql import SQL

__all__ = ["LATEST_VERSION", "MIGRATIONS", "check_schema", "migrate", "schema_version"]

_FILE_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql\Z")


@attrs.frozen
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()

    def statements(self) -> list[str]:
        """The file's statements, one by one: ``executescript`` would commit on its own."""
        found, pending = [], ""
        for line in self.sql.splitlines(keepends=True):
            pending += line
            if sqlite3.complete_statement(pending):
                found.append(pending.strip())
                pending = ""
        if pending.strip() and not all(
            line.strip().startswith("--") or not line.strip() for line in pending.splitlines()
        ):
            raise RuntimeError(f"migration {self.version} ends inside a statement")
        return found


def _load() -> tuple[Migration, ...]:
    folder = resources.files("awa.adapters.sqlite") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _FILE_NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"awa migrations must be numbered 1..n without gaps, got {versions}")
    return tuple(found)


MIGRATIONS = _load()
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
    version = schema_version(conn)
    if version is None:
        raise not_migrated("this database has no awa schema")
    if version < LATEST_VERSION:
        raise not_migrated(
            f"the awa schema is at version {version}, this code needs {LATEST_VERSION}"
        )
    return version


def migrate(conn: sqlite3.Connection, now: datetime) -> list[int]:
    """Apply every pending migration in one transaction; returns the versions applied.
    ``conn`` is in autocommit mode (``isolation_level=None``) and not inside a transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(SQL["create_ledger"])
        current = schema_version(conn) or 0
        if current > LATEST_VERSION:
            raise SchemaNewerThanCode(
                f"the database schema is at version {current}, newer than this awa knows"
                f" ({LATEST_VERSION}): upgrade awa before using or migrating this database"
            )
        applied = []
        for migration in MIGRATIONS[current:]:
            for statement in migration.statements():
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
