"""Rows no reader takes, written straight into a store's tables as a hand, another version or
a bug would: what ``awa.testing.contract.UnreadableRowContract`` calls ``plant_unreadable``,
for the SQLite and PostgreSQL stores (the memory store has ``MemoryStore.plant_unreadable``).

The columns: any time column (``too_late``: after the range Python reads, else before it),
``args``, ``metadata`` and ``errors``.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from psycopg import sql
from psycopg_pool import ConnectionPool

__all__ = ["plant_in", "plant_in_postgres", "plant_in_sqlite"]

# SQLite keeps a time as INTEGER microseconds: +-2**62 is some 146,000 years from the epoch
_SQLITE_JSON: dict[str, object] = {
    "args": '{"unterminated": ',
    "metadata": "[1, 2]",
    "errors": '[{"error": "no attempt or time"}]',
}
# times PostgreSQL keeps and Python cannot hold; JSON with an integer Python will not read
_PG_EARLY = "'0001-12-31 10:00:00+00 BC'::timestamptz"
_PG_LATE = "'10000-01-01 13:00:00+00'::timestamptz"
_PG_HUGE_JSON = "('{\"n\": ' || repeat('9', 5000) || '}')::jsonb"
_PG_JSON = {
    "args": _PG_HUGE_JSON,
    "metadata": _PG_HUGE_JSON,
    "errors": '\'[{"error": "no attempt or time"}]\'::jsonb',
}


def plant_in_sqlite(path: Path, job_id: int, column: str, *, too_late: bool = False) -> None:
    value = _SQLITE_JSON.get(column, 2**62 if too_late else -(2**62))
    with closing(sqlite3.connect(path)) as db, db:
        for table in ("awa_jobs", "awa_dlq"):
            db.execute(f"UPDATE {table} SET {column} = ? WHERE id = ?", (value, job_id))


def plant_in_postgres(
    pool: ConnectionPool[Any], job_id: int, column: str, *, too_late: bool = False
) -> None:
    value = _PG_JSON.get(column, _PG_LATE if too_late else _PG_EARLY)
    with pool.connection() as conn:
        for table in ("awa.jobs", "awa.dlq"):
            conn.execute(
                sql.SQL("UPDATE {} SET {} = {} WHERE id = %s").format(
                    sql.SQL(table), sql.Identifier(column), sql.SQL(value)
                ),
                (job_id,),
            )


def plant_in(store: object, job_id: int, column: str, *, too_late: bool = False) -> None:
    """``plant_unreadable`` on whichever store ``store`` is."""
    from awa.adapters.memory import MemoryStore
    from awa.adapters.postgres import PostgresStore
    from awa.adapters.sqlite import SqliteStore

    if isinstance(store, MemoryStore):
        store.plant_unreadable(job_id, column, too_late=too_late)
    elif isinstance(store, SqliteStore):
        plant_in_sqlite(Path(store.path), job_id, column, too_late=too_late)
    elif isinstance(store, PostgresStore):
        plant_in_postgres(store.pool, job_id, column, too_late=too_late)
    else:
        raise TypeError(f"no way to plant a row in {type(store).__name__}")
