"""The route of one job without a unique key: one small prepared statement
(``insert_job.sql``) that returns only the id and the creation time; the rest of the job is the
domain's rule applied to that time (``encoding.single_job``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.inserts.encoding import one_row, single_job, single_params
from awa.domain import Job, NewJob

__all__ = ["insert_single", "insert_single_async"]


def _tuple_cursor(conn: Any) -> Any:
    """A cursor whose rows are tuples (a caller's connection may make dicts); the store's
    connections already do, and a cursor made without a factory costs less."""
    return conn.cursor() if conn.row_factory is tuple_row else conn.cursor(row_factory=tuple_row)


def insert_single(conn: psycopg.Connection[Any], job: NewJob, now: datetime | None) -> Job:
    """Insert ``job`` on ``conn``; ``now`` stands in for the database clock (``None``:
    ``now()``)."""
    with _tuple_cursor(conn) as cur:
        cur.execute(SQL["insert_job"], single_params(job, now), prepare=True)
        return single_job(job, one_row(cur.fetchone()))


async def insert_single_async(
    conn: psycopg.AsyncConnection[Any], job: NewJob, now: datetime | None
) -> Job:
    """``insert_single`` on an ``AsyncConnection``."""
    async with _tuple_cursor(conn) as cur:
        await cur.execute(SQL["insert_job"], single_params(job, now), prepare=True)
        return single_job(job, one_row(await cur.fetchone()))
