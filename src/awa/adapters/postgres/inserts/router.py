"""The one place an insert's route is decided, once per insert, from what the batch holds:

* one job without a unique key: ``single.py``, ``insert_job.sql``;
* several jobs, none with a unique key: ``by_copy.py``, ``reserve_job_ids.sql`` then ``COPY``;
* more jobs than one COPY message holds, none with a unique key, handed over as chunks the
  producer is still making (``streams``): the same, each chunk made while the last is copied;
* any job with a unique key: ``unique.py``, ``insert_jobs.sql``, which finds the keys' holders;
* on a connection the caller holds (``conn=``): ``on_caller_connection.py``,
  ``insert_jobs_portable.sql``, one statement for every driver;

and on which connection: the store's pool (``insert``, ``insert_batch``), the event loop's own
(``insert_batch_async``, ``insert_async``; through the pool from a thread while it has none,
``loop_connection.py``), or a psycopg connection handed to ``insert_jobs``. The parameters and
COPY text each statement takes are ``encoding.py``'s and ``copy_encoding.py``'s.

The arguments are checked once on every route: ``StoreCore.insert`` checks before it calls the
store's ``_insert``; every other entry here checks itself, then takes the unchecked routes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import psycopg

from awa.adapters.postgres._errors import translate_errors
from awa.adapters.postgres.inserts.by_copy import (
    insert_copied,
    insert_copied_async,
    insert_copied_ids,
    insert_copied_ids_async,
)
from awa.adapters.postgres.inserts.chunks import check_count, made, unique_streamed
from awa.adapters.postgres.inserts.copy_encoding import COPY_CHUNK_JOBS, slices
from awa.adapters.postgres.inserts.encoding import insert_params, is_plain
from awa.adapters.postgres.inserts.on_caller_connection import insert_on, insert_on_async
from awa.adapters.postgres.inserts.single import insert_single, insert_single_async
from awa.adapters.postgres.inserts.unique import insert_unique, insert_unique_async
from awa.domain import Job, NewJob, OnConflict
from awa.domain.unique import check_on_conflict
from awa.ports import BATCH_SIZE_MAX
from awa.ports.checks import check_insert, check_new_jobs, check_streamed_count

if TYPE_CHECKING:
    from awa.adapters.postgres.inserts.loop_connection import LoopInserts

__all__ = ["InsertRouter", "insert_jobs", "insert_jobs_async", "streams"]

ACTION = "inserting jobs"
T = TypeVar("T")
Connection = psycopg.Connection[Any]
AsyncConnection = psycopg.AsyncConnection[Any]
#: a COPY route: ``by_copy.insert_copied`` or its ``_ids`` twin (sync, or awaited)
CopyRoute = Callable[[Connection, int, Iterable[Sequence[NewJob]], datetime | None], T]
AsyncCopyRoute = Callable[
    [AsyncConnection, int, Iterable[Sequence[NewJob]], datetime | None], Awaitable[T]
]


class _Now(Protocol):
    def now(self) -> datetime: ...


def streams(count: int, unique: bool) -> bool:
    """Whether a batch handed over as chunks goes by COPY while they are still being made:
    more jobs than one COPY message holds (fewer have nothing to overlap, and are refused, if
    at all, before any SQL runs), none with a unique key, no more than a batch."""
    return not unique and COPY_CHUNK_JOBS < count <= BATCH_SIZE_MAX


# -- jobs checked and made, on a psycopg connection -----------------------------------------------


def _plain(conn: Connection, jobs: Sequence[NewJob], now: datetime | None) -> list[Job]:
    if len(jobs) == 1:
        return [insert_single(conn, jobs[0], now)]
    return insert_copied(conn, len(jobs), slices(jobs), now)


async def _plain_async(
    conn: AsyncConnection, jobs: Sequence[NewJob], now: datetime | None
) -> list[Job]:
    if len(jobs) == 1:
        return [await insert_single_async(conn, jobs[0], now)]
    return await insert_copied_async(conn, len(jobs), slices(jobs), now)


async def _routed_async(
    conn: AsyncConnection, jobs: Sequence[NewJob], now: datetime | None, mode: OnConflict
) -> list[Job]:
    if is_plain(jobs):
        return await _plain_async(conn, jobs, now)
    return await insert_unique_async(conn, jobs, insert_params(jobs, now), mode)


def insert_jobs(
    conn: Connection,
    jobs: Sequence[NewJob],
    *,
    clock: _Now | None = None,
    on_conflict: OnConflict = "raise",
) -> list[Job]:
    """Insert ``jobs`` inside ``conn``'s current transaction; returns them with their ids.

    Nothing here commits, rolls back or opens a transaction of its own: on a connection that
    is not in autocommit mode psycopg has already begun the caller's transaction, and it stays
    the caller's to end; commit makes the jobs visible (and sends the wake-up), rollback makes
    them vanish. ``clock`` stands in for the database clock (tests); by default ``now()``
    decides whether a job with a ``run_at`` is ``scheduled`` or ``available``. ``on_conflict``
    as ``ClaimStore.insert``."""
    mode = check_insert(jobs, on_conflict)
    if not jobs:
        return []
    now = clock.now() if clock else None
    with translate_errors(ACTION):
        if is_plain(jobs):
            return _plain(conn, jobs, now)
        return insert_unique(conn, jobs, insert_params(jobs, now), mode)


async def insert_jobs_async(
    conn: AsyncConnection,
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
    with translate_errors(ACTION):
        return await _routed_async(conn, jobs, now, mode)


# -- the store's inserts --------------------------------------------------------------------------


def _ids_of(jobs: list[Job]) -> list[int]:
    return [job.id for job in jobs]


def _as_made(jobs: list[Job]) -> list[Job]:
    return jobs


class InsertRouter:
    """``PostgresStore``'s inserts (``awa.ports.BulkInserts``, ``InsertsOnConnection``), mixed
    into the store, which hands its own ``_insert`` to ``_insert_checked``. It needs the
    store's pooled connections (``_connection``), its clock (``_now``) and the event loop's
    connection (``_loop_inserts``)."""

    if TYPE_CHECKING:
        _loop_inserts: LoopInserts

        def _now(self) -> datetime | None: ...

        def _connection(self, action: str) -> AbstractContextManager[Connection]: ...

    # -- on the store's pool --------------------------------------------------------------------
    def _insert_checked(self, jobs: Sequence[NewJob], mode: OnConflict) -> list[Job]:
        """Jobs checked already, on a pooled connection; one statement needs no BEGIN/COMMIT."""
        if not jobs:
            return []
        now = self._now()
        if is_plain(jobs):  # one small statement, or COPY for several
            with self._connection(ACTION) as conn:
                return _plain(conn, jobs, now)
        params = insert_params(jobs, now)
        with self._connection(ACTION) as conn:
            return insert_unique(conn, jobs, params, mode)

    def _copy(self, route: CopyRoute[T], count: int, chunks: Iterable[Sequence[NewJob]]) -> T:
        now = self._now()
        with self._connection(ACTION) as conn:
            return route(conn, count, chunks, now)

    def insert_batch(
        self,
        count: int,
        chunks: Iterable[Sequence[NewJob]],
        *,
        unique: bool,
        on_conflict: OnConflict = "raise",
        ids: bool = False,
    ) -> list[Job] | list[int]:
        """The batch by COPY while its chunks are made (``streams``), else made whole first and
        inserted as ``insert`` does (``awa.ports.BulkInserts``)."""
        if streams(check_count(count), unique):
            check_on_conflict(on_conflict)  # as the insert of the jobs made would refuse it
            if ids:
                return self._copy(insert_copied_ids, count, chunks)
            return self._copy(insert_copied, count, chunks)
        jobs = made(count, chunks)
        inserted = self._insert_checked(jobs, check_insert(jobs, on_conflict))
        return _ids_of(inserted) if ids else inserted

    def insert_streamed(self, count: int, chunks: Iterable[Sequence[NewJob]]) -> list[Job]:
        """Insert ``count`` jobs made chunk by chunk (``awa.ports.StreamsInserts``): the ids of
        all are reserved first, then each chunk is copied while the next is made."""
        return self._copy(insert_copied, check_streamed_count(count), chunks)

    def insert_streamed_ids(self, count: int, chunks: Iterable[Sequence[NewJob]]) -> list[int]:
        """``insert_streamed`` returning the ids alone: no ``Job`` value is made."""
        return self._copy(insert_copied_ids, check_streamed_count(count), chunks)

    # -- from an event loop ---------------------------------------------------------------------
    async def _insert_awaited(self, jobs: list[NewJob], mode: OnConflict) -> list[Job]:
        """Jobs checked already, on the loop's own connection, or through the pool from a
        thread while it has none: the first insert goes through the pool (it checks the
        schema); the loop's connection is then opened in the background."""
        inserted = await self._loop_inserts.run(partial(self._on_loop, jobs, mode))
        if inserted is not None:
            return inserted
        stored = await asyncio.to_thread(self._insert_checked, jobs, mode)
        self._loop_inserts.stored()
        return stored

    async def _on_loop(
        self, jobs: list[NewJob], mode: OnConflict, conn: AsyncConnection
    ) -> list[Job]:
        if not jobs:
            return []
        now = self._now()
        with translate_errors(ACTION):
            return await _routed_async(conn, jobs, now, mode)

    async def _copy_awaited(
        self,
        route: AsyncCopyRoute[T],
        count: int,
        chunks: Iterable[Sequence[NewJob]],
        answer: Callable[[list[Job]], T],
    ) -> T:
        """A COPY route on the loop's own connection; while it has none, every chunk is made
        first and the jobs inserted as ``insert_async`` inserts them, with the refusals of
        the COPY route (more or fewer jobs than counted, a unique key)."""
        copied = await self._loop_inserts.run(partial(self._copy_on_loop, route, count, chunks))
        if copied is not None:
            return copied
        jobs = made(count, chunks)
        check_new_jobs(jobs)
        if not is_plain(jobs):
            raise unique_streamed()
        return answer(await self._insert_awaited(jobs, "raise"))

    async def _copy_on_loop(
        self,
        route: AsyncCopyRoute[T],
        count: int,
        chunks: Iterable[Sequence[NewJob]],
        conn: AsyncConnection,
    ) -> T:
        now = self._now()
        with translate_errors(ACTION):
            return await route(conn, count, chunks, now)

    async def insert_batch_async(
        self,
        count: int,
        chunks: Iterable[Sequence[NewJob]],
        *,
        unique: bool,
        on_conflict: OnConflict = "raise",
        ids: bool = False,
    ) -> list[Job] | list[int]:
        """``insert_batch`` awaited on the caller's event loop, the chunks made there."""
        if streams(check_count(count), unique):
            check_on_conflict(on_conflict)  # as the insert of the jobs made would refuse it
            if ids:
                return await self._copy_awaited(insert_copied_ids_async, count, chunks, _ids_of)
            return await self._copy_awaited(insert_copied_async, count, chunks, _as_made)
        jobs = made(count, chunks)
        inserted = await self._insert_awaited(jobs, check_insert(jobs, on_conflict))
        return _ids_of(inserted) if ids else inserted

    async def insert_async(
        self, jobs: Sequence[NewJob], *, on_conflict: OnConflict = "raise"
    ) -> list[Job]:
        """``insert`` awaited on an event loop (``awa.ports.AsyncInserts``). The first insert
        goes through the pool (it checks the schema); later ones use a connection of the
        loop's own, opened in the background, whenever it is free."""
        mode = check_insert(jobs, on_conflict)
        return await self._insert_awaited(list(jobs), mode)

    async def insert_streamed_async(
        self, count: int, chunks: Iterable[Sequence[NewJob]]
    ) -> list[Job]:
        """``insert_streamed`` on the loop's own connection; while it has none (the first
        insert, or another one on it), every chunk is made first and the jobs inserted as
        ``insert_async`` does."""
        count = check_streamed_count(count)
        return await self._copy_awaited(insert_copied_async, count, chunks, _as_made)

    async def insert_streamed_ids_async(
        self, count: int, chunks: Iterable[Sequence[NewJob]]
    ) -> list[int]:
        """``insert_streamed_ids`` as ``insert_streamed_async`` goes about it."""
        count = check_streamed_count(count)
        return await self._copy_awaited(insert_copied_ids_async, count, chunks, _ids_of)

    async def close_async(self) -> None:
        """Close the connection ``insert_async`` opened on this event loop."""
        await self._loop_inserts.close()

    # -- on the caller's connection -------------------------------------------------------------
    def insert_on(
        self, conn: Any, jobs: Sequence[NewJob], *, on_conflict: OnConflict = "raise"
    ) -> list[Job]:
        """Insert inside the caller's open transaction on a connection of theirs: psycopg,
        SQLAlchemy, Django, asyncpg (``caller_connections``, ``awa.ports.InsertsOnConnection``):
        commit makes the jobs visible and wakes workers, rollback makes them vanish."""
        return insert_on(conn, jobs, now=self._now(), on_conflict=on_conflict)

    async def insert_on_async(
        self, conn: Any, jobs: Sequence[NewJob], *, on_conflict: OnConflict = "raise"
    ) -> list[Job]:
        """``insert_on`` from an event loop: asyncio connections (psycopg, SQLAlchemy,
        asyncpg) are awaited, sync ones used on the caller's thread."""
        return await insert_on_async(conn, jobs, now=self._now(), on_conflict=on_conflict)
