"""What the SQL adapters share about their schemas: the numbered migration files each ships
(``migrations/NNNN_name.sql`` in its package), the refusals of a database that is not migrated
or was migrated by a newer awa, and the version check between them. Each adapter keeps only
how it reads its ledger and applies a file."""

from __future__ import annotations

import hashlib
import re
from importlib import resources

import attrs

from awa.domain import DatabaseError, SchemaNotMigrated

__all__ = [
    "MIGRATE_HINT",
    "Migration",
    "SchemaNewerThanCode",
    "check_version",
    "load_migrations",
    "newer_than_code",
    "not_migrated",
]

MIGRATE_HINT = "run `awa migrate` (or `store.migrate()`) against this database"

_FILE_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql\Z")


class SchemaNewerThanCode(DatabaseError):
    """The database was migrated by a newer awa than this one: upgrade the code first."""


def not_migrated(detail: str) -> SchemaNotMigrated:
    return SchemaNotMigrated(f"{detail}: {MIGRATE_HINT}")


def newer_than_code(version: int, latest: int) -> SchemaNewerThanCode:
    return SchemaNewerThanCode(
        f"the database schema is at version {version}, newer than this awa knows"
        f" ({latest}): upgrade awa before using or migrating this database"
    )


def check_version(version: int | None, latest: int) -> int:
    """Raise ``SchemaNotMigrated`` unless ``version`` is ``latest`` or newer. A newer schema is
    accepted (migrations keep older code working while processes are upgraded one by one);
    only migrating refuses it."""
    if version is None:
        raise not_migrated("this database has no awa schema")
    if version < latest:
        raise not_migrated(f"the awa schema is at version {version}, this code needs {latest}")
    return version


@attrs.frozen
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations(package: str) -> tuple[Migration, ...]:
    """The ``migrations/NNNN_name.sql`` files of ``package``, in order, numbered 1..n."""
    folder = resources.files(package) / "migrations"
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
