"""Driver failures in the domain's words: ``SchemaNotMigrated`` or ``DatabaseError``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import errors as pg_errors

from awa.adapters._schema import MIGRATE_HINT, SchemaNewerThanCode, not_migrated
from awa.adapters.core import UniqueKeyRace
from awa.domain import DatabaseError, ValidationError

__all__ = [
    "MIGRATE_HINT",
    "UNIQUE_INDEX",
    "SchemaNewerThanCode",
    "not_migrated",
    "translate_errors",
]

#: the index that holds every unique key (migration 0004)
UNIQUE_INDEX = "jobs_unique_key_idx"
# what PostgreSQL says when the awa schema, one of its tables, or a column is missing
_MISSING_SCHEMA = (pg_errors.UndefinedTable, pg_errors.InvalidSchemaName, pg_errors.UndefinedColumn)


@contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Re-raise driver and pool errors from ``action`` as awa errors, keeping the cause."""
    try:
        yield
    except pg_errors.UniqueViolation as exc:
        if exc.diag.constraint_name != UNIQUE_INDEX:
            raise DatabaseError(f"{action} failed: {type(exc).__name__}: {exc}") from exc
        # a key the core found free was taken by a concurrent insert: the core runs it again
        raise UniqueKeyRace(f"{action}: {exc.diag.message_detail or exc}") from exc
    except _MISSING_SCHEMA as exc:
        raise not_migrated(f"the awa schema is missing or incomplete ({exc.sqlstate})") from exc
    except (psycopg.DataError, UnicodeEncodeError) as exc:
        # the value, not the database, is at fault (SQLSTATE class 22, or text the driver
        # cannot encode): validation should have refused it first; say so the same way
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValidationError(f"{action}: the database refused a value: {first_line}") from exc
    except psycopg.Error as exc:  # also psycopg_pool.PoolTimeout: no connection to be had
        raise DatabaseError(f"{action} failed: {type(exc).__name__}: {exc}") from exc
