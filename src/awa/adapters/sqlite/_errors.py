"""SQLite failures in the domain's words: ``SchemaNotMigrated``, ``UniqueKeyRace`` (the unique
index refused a key the core had checked) or ``DatabaseError``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from awa.adapters._schema import MIGRATE_HINT, SchemaNewerThanCode, not_migrated
from awa.adapters.core import UniqueKeyRace
from awa.domain import DatabaseError, ValidationError

__all__ = ["MIGRATE_HINT", "SchemaNewerThanCode", "not_migrated", "translate_errors"]

# the message SQLite gives when jobs_unique_key_idx refuses a second holder of a key
_UNIQUE_KEY_TAKEN = "UNIQUE constraint failed: awa_jobs.unique_key"


@contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Re-raise driver errors from ``action`` as awa errors, keeping the cause."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        if _UNIQUE_KEY_TAKEN in str(exc):
            raise UniqueKeyRace(f"{action}: {exc}") from exc
        raise DatabaseError(f"{action} failed: IntegrityError: {exc}") from exc
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc) or "no such column" in str(exc):
            raise not_migrated(f"the awa schema is missing or incomplete ({exc})") from exc
        raise DatabaseError(f"{action} failed: {exc}") from exc
    except (sqlite3.DataError, OverflowError) as exc:
        raise ValidationError(f"{action}: the database refused a value: {exc}") from exc
    except sqlite3.Error as exc:
        raise DatabaseError(f"{action} failed: {type(exc).__name__}: {exc}") from exc
