"""Transactional enqueue: insert jobs on a connection the caller holds, in the caller's
transaction. Commit makes them visible (and sends the wake-up); rollback makes them vanish.

Nothing here commits, rolls back or opens a transaction of its own: on a connection that is not
in autocommit mode psycopg has already begun the caller's transaction, and it stays the
caller's to end. An insert of unique jobs there runs inside a savepoint, so that a concurrent
insert taking the same key (which fails the statement) costs the statement, not the caller's
transaction.

Jobs without unique keys take ``plain_inserts`` (one small statement, or COPY for several).
Unique keys (``awa.domain.unique``): ``insert_jobs.sql`` finds the holders and inserts nothing
(``on_conflict="raise"``) or only the free jobs (``"skip"``). A key another transaction commits
after the statement's snapshot makes it fail with ``unique_violation``; it is then run again,
and sees the holder.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any, Protocol

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row

from awa.adapters.postgres._errors import UNIQUE_INDEX, translate_errors
from awa.adapters.postgres._rows import (
    checked_rows,
    checked_rows_async,
    insert_params,
    job_from_row,
)
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.plain_inserts import insert_plain, insert_plain_async, is_plain
from awa.domain import DatabaseError, Job, NewJob, OnConflict
from awa.domain.unique import Blocked, HeldBy, RepeatOf, answer_inserts, refuse_blocked
from awa.ports.checks import check_insert

__all__ = [
    "CALLBACK_CHANNEL",
    "CANCEL_CHANNEL",
    "INSERT_RERUNS",
    "UNIQUE_INDEX",
    "WAKEUP_CHANNEL",
    "answer_rows",
    "insert_jobs",
    "insert_jobs_async",
    "rerun_exhausted",
]

#: ``LISTEN`` here for ``NOTIFY`` with a queue name as payload when that queue has new work.
WAKEUP_CHANNEL = "awa_wakeup"
#: ``LISTEN`` here for ``{"id": ..., "run_lease": ...}`` when a live attempt was cancelled.
CANCEL_CHANNEL = "awa_cancel"
#: ``LISTEN`` here for ``{"id": ..., "run_lease": ...}`` when the external side answered the
#: callback of that attempt (resumed, completed, failed or retried it).
CALLBACK_CHANNEL = "awa_callback"
#: how often an insert runs again when concurrent inserts keep taking its keys
INSERT_RERUNS = 5
_BLOCKED_PREFIX = 2  # insert_jobs.sql rows: blocked_ord, repeat_of, then the job


class _Now(Protocol):
    def now(self) -> datetime: ...


def answer(rows: Sequence[Sequence[Any]], jobs: Sequence[NewJob], mode: OnConflict) -> list[Job]:
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


def insert_on(
    conn: psycopg.Connection[Any],
    jobs: Sequence[NewJob],
    params: dict[str, Any],
    mode: OnConflict,
) -> list[Job]:
    """Run ``insert_jobs.sql`` (which also sends the wake-ups) with ready parameters, again
    when a concurrent insert took a unique key meanwhile."""
    params = {**params, "skip_held": mode == "skip"}
    for _ in range(INSERT_RERUNS):
        try:
            guard: AbstractContextManager[Any] = _guard(conn, jobs)
            with guard, conn.cursor(row_factory=tuple_row) as cur:
                cur.execute(SQL["insert_jobs"], params)
                return answer(checked_rows(cur, _BLOCKED_PREFIX), jobs, mode)
        except pg_errors.UniqueViolation as exc:
            if not _key_taken(exc):
                raise
    raise rerun_exhausted()


def insert_jobs(
    conn: psycopg.Connection[Any],
    jobs: Sequence[NewJob],
    *,
    clock: _Now | None = None,
    on_conflict: OnConflict = "raise",
) -> list[Job]:
    """Insert ``jobs`` inside ``conn``'s current transaction; returns them with their ids.

    ``clock`` stands in for the database clock (tests); by default ``now()`` decides whether a
    job with a ``run_at`` is ``scheduled`` or ``available``. ``on_conflict`` as
    ``ClaimStore.insert``."""
    mode = check_insert(jobs, on_conflict)
    if not jobs:
        return []
    now = clock.now() if clock else None
    with translate_errors("inserting jobs"):
        if is_plain(jobs):
            return insert_plain(conn, jobs, now)
        return insert_on(conn, jobs, insert_params(jobs, now), mode)


async def insert_jobs_async(
    conn: psycopg.AsyncConnection[Any],
    jobs: Sequence[NewJob],
    *,
    clock: _Now | None = None,
    on_conflict: OnConflict = "raise",
) -> list[Job]:
    """``insert_jobs`` for an ``AsyncConnection``."""
    mode = check_insert(jobs, on_conflict)
    if not jobs:
        return []
    now = clock.now() if clock else None
    if is_plain(jobs):
        with translate_errors("inserting jobs"):
            return await insert_plain_async(conn, jobs, now)
    params = {**insert_params(jobs, now), "skip_held": mode == "skip"}
    with translate_errors("inserting jobs"):
        for _ in range(INSERT_RERUNS):
            try:
                guard: AbstractAsyncContextManager[Any] = _guard(conn, jobs)
                async with guard, conn.cursor(row_factory=tuple_row) as cur:
                    await cur.execute(SQL["insert_jobs"], params)
                    rows = await checked_rows_async(cur, _BLOCKED_PREFIX)
                    return answer(rows, jobs, mode)
            except pg_errors.UniqueViolation as exc:
                if not _key_taken(exc):
                    raise
    raise rerun_exhausted()
