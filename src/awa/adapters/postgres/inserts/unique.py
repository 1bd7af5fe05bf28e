"""The route of a batch that holds unique keys (``awa.domain.unique``): ``insert_jobs.sql`` finds
the keys' holders in the same statement and inserts nothing (``on_conflict="raise"``) or only
the free jobs (``"skip"``); it also sends the wake-ups. COPY cannot look for a holder.

A key another transaction commits after the statement's snapshot makes it fail with
``unique_violation``; it is then run again, and sees the holder. Inside the caller's
transaction the statement runs in a savepoint, so that such a failure costs the statement, not
their transaction. The answer is read the same way on the caller's connection
(``on_caller_connection.py``), whose portable statement writes the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row

from awa.adapters.postgres._errors import UNIQUE_INDEX
from awa.adapters.postgres._rows import checked_rows, checked_rows_async, job_from_row
from awa.adapters.postgres._sql import SQL
from awa.domain import DatabaseError, Job, NewJob, OnConflict
from awa.domain.unique import Blocked, HeldBy, RepeatOf, answer_inserts, refuse_blocked

__all__ = [
    "INSERT_RERUNS",
    "answer_rows",
    "insert_unique",
    "insert_unique_async",
    "rerun_exhausted",
]

#: how often an insert runs again when concurrent inserts keep taking its keys
INSERT_RERUNS = 5
_BLOCKED_PREFIX = 2  # insert_jobs.sql rows: blocked_ord, repeat_of, then the job


def _answer(rows: Sequence[Sequence[Any]], jobs: Sequence[NewJob], mode: OnConflict) -> list[Job]:
    """The answer to an insert from ``insert_jobs.sql``'s rows (``awa.domain.unique``)."""
    return answer_rows(
        [
            (row[0], row[1], job_from_row(row, _BLOCKED_PREFIX) if row[1] is None else None)
            for row in rows
        ],
        len(jobs),
        mode,
    )


def answer_rows(
    rows: Sequence[tuple[int | None, int | None, Job | None]], count: int, mode: OnConflict
) -> list[Job]:
    """The answer to an insert of ``count`` jobs from its rows, each ``(blocked_ord,
    repeat_of, job)`` read as ``insert_jobs.sql`` writes them: an inserted job (no
    ``blocked_ord``), a request whose key ``job`` holds, or one repeating an earlier request."""
    inserted = sorted((job for ord_, _, job in rows if ord_ is None and job), key=lambda j: j.id)
    blocked: dict[int, Blocked] = {}
    for ord_, repeat_of, job in rows:
        if ord_ is not None and repeat_of is not None:
            blocked[ord_ - 1] = RepeatOf(repeat_of - 1)
        elif ord_ is not None and job is not None:
            blocked[ord_ - 1] = HeldBy(job)
    refuse_blocked(blocked, mode)
    return answer_inserts(count, inserted, blocked)


def _key_taken(exc: pg_errors.UniqueViolation) -> bool:
    return exc.diag.constraint_name == UNIQUE_INDEX


def rerun_exhausted() -> DatabaseError:
    return DatabaseError(
        f"inserting jobs: concurrent inserts kept taking their unique keys ({INSERT_RERUNS}"
        " tries); nothing was inserted"
    )


def _guard(conn: Any, jobs: Sequence[NewJob]) -> Any:
    """A savepoint for an insert of unique jobs inside the caller's transaction (its failure
    must not end their transaction); nothing on an idle autocommit connection."""
    unique = any(job.unique is not None for job in jobs)
    if unique and conn.info.transaction_status == TransactionStatus.INTRANS:
        return conn.transaction()
    return nullcontext()


def insert_unique(
    conn: psycopg.Connection[Any],
    jobs: Sequence[NewJob],
    params: dict[str, Any],
    mode: OnConflict,
) -> list[Job]:
    """Run ``insert_jobs.sql`` with ready parameters (``encoding.insert_params``), again when
    a concurrent insert took a unique key meanwhile."""
    params = {**params, "skip_held": mode == "skip"}
    for _ in range(INSERT_RERUNS):
        try:
            guard: AbstractContextManager[Any] = _guard(conn, jobs)
            with guard, conn.cursor(row_factory=tuple_row) as cur:
                cur.execute(SQL["insert_jobs"], params)
                return _answer(checked_rows(cur, _BLOCKED_PREFIX), jobs, mode)
        except pg_errors.UniqueViolation as exc:
            if not _key_taken(exc):
                raise
    raise rerun_exhausted()


async def insert_unique_async(
    conn: psycopg.AsyncConnection[Any],
    jobs: Sequence[NewJob],
    params: dict[str, Any],
    mode: OnConflict,
) -> list[Job]:
    """``insert_unique`` on an ``AsyncConnection``."""
    params = {**params, "skip_held": mode == "skip"}
    for _ in range(INSERT_RERUNS):
        try:
            guard: AbstractAsyncContextManager[Any] = _guard(conn, jobs)
            async with guard, conn.cursor(row_factory=tuple_row) as cur:
                await cur.execute(SQL["insert_jobs"], params)
                rows = await checked_rows_async(cur, _BLOCKED_PREFIX)
                return _answer(rows, jobs, mode)
        except pg_errors.UniqueViolation as exc:
            if not _key_taken(exc):
                raise
    raise rerun_exhausted()
