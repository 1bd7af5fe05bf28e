"""Schema migrations: numbered ``migrations/NNNN_name.sql`` files and a version ledger.

``migrate`` is safe to run from several processes at once (a transaction-level advisory lock
serialises them; the later ones find nothing to do), idempotent, and refuses a database that a
newer awa migrated. All pending migrations apply in one transaction: all or nothing, with no
statement timeout (the store's pool sets one for its calls; ``migrate_no_timeout.sql``).
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from typing import Any

import attrs
import psycopg

from awa.adapters.postgres._errors import SchemaNewerThanCode, not_migrated, translate_errors
from awa.adapters.postgres._sql import SQL

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "MIGRATION_LOCK_KEY",
    "Migration",
    "check_schema",
    "migrate",
    "schema_version",
]

#: ``pg_advisory_xact_lock`` key held while migrating: the first 8 bytes of sha256("awa.migrate")
MIGRATION_LOCK_KEY = int.from_bytes(hashlib.sha256(b"awa.migrate").digest()[:8], "big", signed=True)

_FILE_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql\Z")


@attrs.frozen
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def _load_migrations() -> tuple[Migration, ...]:
    folder = resources.files("awa.adapters.postgres") / "migrations"
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


MIGRATIONS = _load_migrations()
LATEST_VERSION = MIGRATIONS[-1].version


def schema_version(conn: psycopg.Connection[Any]) -> int | None:
    """The newest migration applied, or ``None`` for a database awa never migrated.
    Runs in a savepoint so that a caller's open transaction survives the probe."""
    try:
        with conn.transaction(), conn.cursor() as cur:
            row = cur.execute(SQL["schema_version"]).fetchone()
    except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
        return None
    return None if row is None else row[0]


def _refuse_newer(version: int) -> SchemaNewerThanCode:
    return SchemaNewerThanCode(
        f"the database schema is at version {version}, newer than this awa knows"
        f" ({LATEST_VERSION}): upgrade awa before using or migrating this database"
    )


def check_schema(conn: psycopg.Connection[Any]) -> int:
    """Raise ``SchemaNotMigrated`` unless the database is at ``LATEST_VERSION`` or newer.

    A newer schema is accepted here (migrations keep older code working during a rolling
    deploy); only ``migrate`` refuses it."""
    with translate_errors("checking the awa schema version"):
        version = schema_version(conn)
    if version is None:
        raise not_migrated("this database has no awa schema")
    if version < LATEST_VERSION:
        raise not_migrated(
            f"the awa schema is at version {version}, this code needs {LATEST_VERSION}"
        )
    return version


def migrate(conn: psycopg.Connection[Any]) -> list[int]:
    """Apply every pending migration in one transaction; returns the versions applied.

    ``conn`` must not be inside a transaction: the migration commits on its own."""
    with translate_errors("migrating the awa schema"), conn.transaction():
        cur = conn.cursor()
        cur.execute(SQL["migrate_no_timeout"])
        cur.execute(SQL["migrate_lock"], {"key": MIGRATION_LOCK_KEY})
        cur.execute(SQL["create_schema"])
        cur.execute(SQL["create_ledger"])
        row = cur.execute(SQL["schema_version"]).fetchone()
        current = (row[0] if row else None) or 0
        if current > LATEST_VERSION:
            raise _refuse_newer(current)
        applied = []
        for migration in MIGRATIONS:
            if migration.version <= current:
                continue
            cur.execute(migration.sql.encode())  # several statements: simple query protocol
            cur.execute(
                SQL["record_migration"],
                {
                    "version": migration.version,
                    "name": migration.name,
                    "checksum": migration.checksum,
                },
            )
            applied.append(migration.version)
        return applied
