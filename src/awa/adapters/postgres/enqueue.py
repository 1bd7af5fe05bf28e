"""Transactional enqueue: insert jobs on a connection the caller holds, in the caller's
transaction. Commit makes them visible (and sends the wake-up); rollback makes them vanish.

Nothing here commits, rolls back or opens a transaction of its own: on a connection that is not
in autocommit mode psycopg has already begun the caller's transaction, and it stays the
caller's to end.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import psycopg
from psycopg.rows import tuple_row

from awa.adapters.postgres._errors import translate_errors
from awa.adapters.postgres._rows import (
    checked_rows,
    checked_rows_async,
    insert_params,
    job_from_row,
)
from awa.adapters.postgres._sql import SQL
from awa.domain import Job, NewJob
from awa.ports.checks import check_new_jobs

__all__ = [
    "CALLBACK_CHANNEL",
    "CANCEL_CHANNEL",
    "WAKEUP_CHANNEL",
    "insert_jobs",
    "insert_jobs_async",
]

#: ``LISTEN`` here for ``NOTIFY`` with a queue name as payload when that queue has new work.
WAKEUP_CHANNEL = "awa_wakeup"
#: ``LISTEN`` here for ``{"id": ..., "run_lease": ...}`` when a live attempt was cancelled.
CANCEL_CHANNEL = "awa_cancel"
#: ``LISTEN`` here for ``{"id": ..., "run_lease": ...}`` when the external side answered the
#: callback of that attempt (resumed, completed, failed or retried it).
CALLBACK_CHANNEL = "awa_callback"


class _Now(Protocol):
    def now(self) -> datetime: ...


def jobs_from_rows(rows: Sequence[Sequence[Any]]) -> list[Job]:
    """Inserted rows in request order (ids are assigned in that order)."""
    return sorted((job_from_row(row) for row in rows), key=lambda job: job.id)


def insert_on(conn: psycopg.Connection[Any], params: dict[str, Any]) -> list[Job]:
    """Run ``insert_jobs.sql`` (which also sends the wake-ups) with ready parameters."""
    with conn.cursor(row_factory=tuple_row) as cur:
        cur.execute(SQL["insert_jobs"], params)
        return jobs_from_rows(checked_rows(cur))


def insert_jobs(
    conn: psycopg.Connection[Any], jobs: Sequence[NewJob], *, clock: _Now | None = None
) -> list[Job]:
    """Insert ``jobs`` inside ``conn``'s current transaction; returns them with their ids.

    ``clock`` stands in for the database clock (tests); by default ``now()`` decides whether a
    job with a ``run_at`` is ``scheduled`` or ``available``."""
    params = insert_params(check_new_jobs(jobs), clock.now() if clock else None)
    if not jobs:
        return []
    with translate_errors("inserting jobs"):
        return insert_on(conn, params)


async def insert_jobs_async(
    conn: psycopg.AsyncConnection[Any], jobs: Sequence[NewJob], *, clock: _Now | None = None
) -> list[Job]:
    """``insert_jobs`` for an ``AsyncConnection``."""
    params = insert_params(check_new_jobs(jobs), clock.now() if clock else None)
    if not jobs:
        return []
    with translate_errors("inserting jobs"):
        async with conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(SQL["insert_jobs"], params)
            return jobs_from_rows(await checked_rows_async(cur))
