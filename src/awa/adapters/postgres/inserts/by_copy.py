"""The route of several jobs without unique keys: ``reserve_job_ids.sql`` hands out the ids and
the time, ``awa.domain.decisions.create_jobs`` decides every column from them, ``COPY`` writes
the rows straight into ``awa.jobs_hot`` (``copy_jobs.sql``) and ``notify_wakeup.sql`` wakes each
queue that got an available job once, all in one transaction: nothing comes back to decode, and
PostgreSQL inserts the copied rows a page at a time.

A streamed batch takes this route with chunks the producer is still making: the ids of all its
jobs are reserved first, then each chunk is made and written while PostgreSQL reads the last.
Jobs made already are cut into chunks of ``COPY_CHUNK_JOBS``.

The jobs returned are the domain's own values, the same ones written, so they equal what a
read of the rows gives back. Nothing here ends a transaction it did not begin: on a connection
already in a transaction the rows join it; on an idle autocommit connection the insert runs in
a transaction of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row

from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.inserts.copy_encoding import copy_chunks
from awa.adapters.postgres.inserts.encoding import one_row
from awa.domain import Job, NewJob

__all__ = ["insert_copied", "insert_copied_async", "insert_copied_ids", "insert_copied_ids_async"]


def _idle_autocommit(conn: Any) -> bool:
    """Whether the insert needs a transaction of its own: on an idle autocommit connection.
    Inside one the caller (or psycopg, off autocommit) began, it joins that."""
    return bool(conn.autocommit) and conn.info.transaction_status == TransactionStatus.IDLE


def _reserve(own: bool) -> str:
    # a transaction of our own begins in the same round trip as the reservation (a client-side
    # bound cursor sends both as one simple query), and ends with the wake-ups
    return f"BEGIN;\n{SQL['reserve_job_ids']}" if own else SQL["reserve_job_ids"]


def _wake_and_end(queues: list[str], own: bool) -> str | None:
    statements = [SQL["notify_wakeup"]] if queues else []
    return ";\n".join([*statements, "COMMIT"] if own else statements) or None


def _ended(conn: Any, own: bool) -> bool:
    """After a failure: whether the transaction of our own still needs its ROLLBACK."""
    status = conn.info.transaction_status
    return own and status in (TransactionStatus.INTRANS, TransactionStatus.INERROR)


def _ids(ids: str) -> list[int]:
    return [int(job_id) for job_id in ids.split(",")]


class _Copy:
    """One COPY insert, the same on a sync or an async connection (``_copied``,
    ``_copied_async`` only run its statements): the reservation, the COPY text of each chunk,
    the jobs made and the queues they wake, and the statement that ends it."""

    def __init__(
        self,
        conn: Any,
        count: int,
        chunks: Iterable[Sequence[NewJob]],
        now: datetime | None,
        *,
        make_jobs: bool,
    ) -> None:
        self.own = _idle_autocommit(conn)
        self.reserve = _reserve(self.own)
        self.reserve_params = {"now": now, "count": count}
        #: the jobs written (none unless ``make_jobs``) and their ids as text
        self.created: list[Job] = []
        self.ids = ""
        self._chunks = chunks
        self._make_jobs = make_jobs
        self._woken: dict[str, None] = {}

    def texts(self, reserved: Any) -> Iterator[str]:
        """The COPY text of each chunk, from the reservation's row (read here, before the
        COPY begins), each chunk made only when the last is on its way."""
        now, self.ids = one_row(reserved)[:2]
        return self._texts(now)

    def _texts(self, now: datetime) -> Iterator[str]:
        chunks = copy_chunks(self._chunks, now, self.ids, make_jobs=self._make_jobs)
        for chunk, queues, text in chunks:
            self.created += chunk
            self._woken.update(dict.fromkeys(queues))
            yield text

    def end(self) -> tuple[str, dict[str, Any]] | None:
        """The wake-ups of the queues that got an available job, and our own COMMIT."""
        queues = list(self._woken)
        end = _wake_and_end(queues, self.own)
        return None if end is None else (end, {"queues": queues})


def insert_copied(
    conn: psycopg.Connection[Any],
    count: int,
    chunks: Iterable[Sequence[NewJob]],
    now: datetime | None,
) -> list[Job]:
    """Insert ``count`` jobs without unique keys, taken from ``chunks`` one chunk at a time,
    each made only once the last is on its way; all or none of them (an exception from
    ``chunks`` rolls back). On a connection in the caller's transaction, such an exception
    leaves that transaction failed: stream on a connection of your own. ``now`` stands in for
    the database clock (``None``: ``now()``)."""
    return _copied(conn, _Copy(conn, count, chunks, now, make_jobs=True)).created


def insert_copied_ids(
    conn: psycopg.Connection[Any],
    count: int,
    chunks: Iterable[Sequence[NewJob]],
    now: datetime | None,
) -> list[int]:
    """``insert_copied`` returning only the ids, in order: no ``Job`` is made."""
    return _ids(_copied(conn, _Copy(conn, count, chunks, now, make_jobs=False)).ids)


def _copied(conn: psycopg.Connection[Any], run: _Copy) -> _Copy:
    with psycopg.ClientCursor(conn, row_factory=tuple_row) as cur:
        try:
            cur.execute(run.reserve, run.reserve_params)
            if run.own:
                cur.nextset()
            texts = run.texts(cur.fetchone())
            with cur.copy(SQL["copy_jobs"]) as copy:
                for text in texts:
                    copy.write(text)
            end = run.end()
            if end is not None:
                cur.execute(*end)
        except BaseException:
            if _ended(conn, run.own):
                with contextlib.suppress(Exception):
                    conn.execute("ROLLBACK")
            raise
    return run


async def insert_copied_async(
    conn: psycopg.AsyncConnection[Any],
    count: int,
    chunks: Iterable[Sequence[NewJob]],
    now: datetime | None,
) -> list[Job]:
    """``insert_copied`` on an ``AsyncConnection``."""
    return (await _copied_async(conn, _Copy(conn, count, chunks, now, make_jobs=True))).created


async def insert_copied_ids_async(
    conn: psycopg.AsyncConnection[Any],
    count: int,
    chunks: Iterable[Sequence[NewJob]],
    now: datetime | None,
) -> list[int]:
    """``insert_copied_ids`` on an ``AsyncConnection``."""
    return _ids((await _copied_async(conn, _Copy(conn, count, chunks, now, make_jobs=False))).ids)


async def _copied_async(conn: psycopg.AsyncConnection[Any], run: _Copy) -> _Copy:
    """``_copied`` on an ``AsyncConnection``."""
    async with psycopg.AsyncClientCursor(conn, row_factory=tuple_row) as cur:
        try:
            await cur.execute(run.reserve, run.reserve_params)
            if run.own:
                cur.nextset()
            texts = run.texts(await cur.fetchone())
            async with cur.copy(SQL["copy_jobs"]) as copy:
                for text in texts:
                    await copy.write(text)
            end = run.end()
            if end is not None:
                await cur.execute(*end)
        except BaseException:
            if _ended(conn, run.own):
                with contextlib.suppress(Exception):
                    await conn.execute("ROLLBACK")
            raise
    return run
