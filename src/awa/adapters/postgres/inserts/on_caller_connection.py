"""The route of an insert on a connection the caller holds (``caller_connections.py`` recognises
it): one statement serves every driver (``insert_jobs_portable.sql``), so the insert joins the
transaction the caller (or their framework) opened, and commits or rolls back with it: nothing
here begins, commits or rolls back anything.

Bad input is refused before any SQL runs, so a refusal never aborts the caller's transaction.
Unique jobs (``awa.domain.unique``) are inserted in a savepoint of the driver's own making, so
that a concurrent insert taking the same key costs the statement, not the caller's transaction:
the statement then runs again and sees the holder.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from awa.adapters.postgres._errors import MIGRATE_HINT
from awa.adapters.postgres._rows import job_from_json
from awa.adapters.postgres.inserts.caller_connections import (
    CallerConnection,
    Row,
    caller_connection,
)
from awa.adapters.postgres.inserts.encoding import portable_insert_params
from awa.adapters.postgres.inserts.unique import INSERT_RERUNS, answer_rows, rerun_exhausted
from awa.domain import DatabaseError, Job, NewJob, OnConflict, SchemaNotMigrated, ValidationError
from awa.ports.checks import check_insert

__all__ = ["insert_on", "insert_on_async"]

# what PostgreSQL says when the awa schema, a table or a column is missing
_MISSING_SCHEMA = {"42P01", "3F000", "42703"}
# a concurrent insert committed a unique key this statement's snapshot did not see
_UNIQUE_VIOLATION = "23505"


def insert_on(
    conn: Any,
    jobs: Sequence[NewJob],
    *,
    now: datetime | None = None,
    on_conflict: OnConflict = "raise",
) -> list[Job]:
    """Insert ``jobs`` in ``conn``'s current transaction (a sync connection); ``now`` stands
    in for the database clock (tests); ``on_conflict`` as ``ClaimStore.insert``."""
    caller = caller_connection(conn)
    if caller.is_async:
        raise ValidationError(
            f"conn is a {caller.name}, which is awaited: use awa.AsyncClient to insert on it"
        )
    mode, params = _checked(jobs, now, on_conflict)
    if not jobs:
        return []
    with _translated(caller):
        if not _unique(jobs):
            return _answer(caller.run(params), jobs, mode)
        for _ in range(INSERT_RERUNS):
            with _rerun_on_unique_violation():
                with caller.savepoint():
                    rows = caller.run(params)
                return _answer(rows, jobs, mode)
    raise rerun_exhausted()


async def insert_on_async(
    conn: Any,
    jobs: Sequence[NewJob],
    *,
    now: datetime | None = None,
    on_conflict: OnConflict = "raise",
) -> list[Job]:
    """``insert_on`` from an event loop: an asyncio connection is awaited; a sync one (a
    Django connection, a SQLAlchemy ``Session``) is used right here, on the caller's thread,
    which is where such connections belong."""
    caller = caller_connection(conn)
    if not caller.is_async:
        return insert_on(conn, jobs, now=now, on_conflict=on_conflict)
    mode, params = _checked(jobs, now, on_conflict)
    if not jobs:
        return []
    with _translated(caller):
        if not _unique(jobs):
            return _answer(await caller.run(params), jobs, mode)
        for _ in range(INSERT_RERUNS):
            with _rerun_on_unique_violation():
                async with caller.savepoint():
                    rows = await caller.run(params)
                return _answer(rows, jobs, mode)
    raise rerun_exhausted()


def _checked(
    jobs: Sequence[NewJob], now: datetime | None, on_conflict: OnConflict
) -> tuple[OnConflict, dict[str, Any]]:
    """The jobs checked before any SQL runs (a refusal never aborts the caller's transaction),
    and the parameters of the one statement."""
    mode = check_insert(jobs, on_conflict)
    return mode, portable_insert_params(jobs, now, skip_held=mode == "skip")


@contextmanager
def _rerun_on_unique_violation() -> Iterator[None]:
    """A concurrent insert committed a key this statement's snapshot did not see: the
    statement failed inside its savepoint, alone, and the loop runs it again (it then sees
    the holder). Any other error goes on."""
    try:
        yield
    except Exception as exc:
        if _sqlstate(exc) != _UNIQUE_VIOLATION:
            raise


def _unique(jobs: Sequence[NewJob]) -> bool:
    return any(job.unique is not None for job in jobs)


def _answer(rows: Sequence[Row], jobs: Sequence[NewJob], mode: OnConflict) -> list[Job]:
    read = [
        (blocked_ord, repeat_of, job_from_json(job) if job is not None else None)
        for blocked_ord, repeat_of, job in rows
    ]
    return answer_rows(read, len(jobs), mode)


@contextmanager
def _translated(caller: CallerConnection) -> Iterator[None]:
    """A driver's error in awa's words, whichever driver raised it, keeping the cause. The
    caller's transaction is aborted by then; it stays theirs to roll back."""
    try:
        yield
    except Exception as exc:
        sqlstate = _sqlstate(exc)
        if sqlstate is None:
            raise
        if sqlstate in _MISSING_SCHEMA:
            raise SchemaNotMigrated(
                f"the awa schema is missing or incomplete ({sqlstate}): {MIGRATE_HINT}"
            ) from exc
        first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DatabaseError(
            f"inserting jobs on a {caller.name} failed: {type(exc).__name__}: {first_line}"
        ) from exc


def _sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a database error from any of the drivers: psycopg and asyncpg carry it
    (``sqlstate``), SQLAlchemy wraps the driver's error (``orig``), Django chains it."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return None
        code = getattr(seen, "sqlstate", None)
        if isinstance(code, str):
            return code
        seen = getattr(seen, "orig", None) or seen.__cause__
    return None
