"""Schema migrations: numbered ``migrations/NNNN_name.sql`` files and a version ledger.

``migrate`` is safe to run from several processes at once (a transaction-level advisory lock
serialises them; the later ones find nothing to do), idempotent, and refuses a database that a
newer awa migrated. All pending migrations apply in one transaction: all or nothing, with no
statement timeout (the store's pool sets one for its calls; ``migrate_no_timeout.sql``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

from awa.adapters._schema import Migration, check_version, load_migrations, newer_than_code
from awa.adapters.postgres._errors import translate_errors
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

MIGRATIONS = load_migrations("awa.adapters.postgres")
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


def check_schema(conn: psycopg.Connection[Any]) -> int:
    """Raise ``SchemaNotMigrated`` unless the database is at ``LATEST_VERSION`` or newer.

    A newer schema is accepted here (migrations keep older code working during a rolling
    deploy); only ``migrate`` refuses it."""
    with translate_errors("checking the awa schema version"):
        version = schema_version(conn)
    return check_version(version, LATEST_VERSION)


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
            raise newer_than_code(current, LATEST_VERSION)
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
