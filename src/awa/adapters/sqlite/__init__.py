"""The SQLite adapter: ``SqliteStore`` (a ``ClaimStore`` in one file, on the standard
library's ``sqlite3``) and its migrations. ``docs/sqlite.md`` says when to choose it."""

from awa.adapters.sqlite._errors import MIGRATE_HINT, SchemaNewerThanCode
from awa.adapters.sqlite.migrations import LATEST_VERSION, migrate, schema_version
from awa.adapters.sqlite.store import MEMORY, SqliteStore
from awa.adapters.sqlite.url import sqlite_path

__all__ = [
    "LATEST_VERSION",
    "MEMORY",
    "MIGRATE_HINT",
    "SchemaNewerThanCode",
    "SqliteStore",
    "migrate",
    "schema_version",
    "sqlite_path",
]
