"""Inserts from an event loop on one ``AsyncConnection`` of the store's own: no hop to a thread
and back, which costs about a third of a single insert. Which statement runs on it is the
router's to say (``router.py``); this module keeps the connection, and bounds each call on it
(``LoopBound``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool

from awa.adapters.postgres._errors import translate_errors
from awa.adapters.postgres.connections import Bounds, abandon, connect_options
from awa.domain import DatabaseError

__all__ = ["LoopBound", "LoopInserts"]

log = logging.getLogger("awa.postgres")
Pool = ConnectionPool[Any]
T = TypeVar("T")


class LoopInserts:
    """Inserts on PostgreSQL from the client's event loop, on one ``AsyncConnection`` of its
    own: no hop to a thread and back, which costs about a third of a single insert.

    Inserts go through the store until one has succeeded there (the store checks the schema);
    the connection is then opened in the background, and inserts go through the store until it
    is open, while another insert is on it, or from another event loop. A connection left
    broken or busy by a failed or cancelled insert is closed and opened again.

    The connection has the adapter's keepalives and connect timeout, and each insert on it is
    bounded by ``call_timeout_s`` (``LoopBound``): an insert that outlives it gets
    its connection abandoned and a ``DatabaseError``; the next inserts go through the store
    while a new connection opens."""

    def __init__(self, pool: Pool, bounds: Bounds | None = None) -> None:
        self._pool = pool
        self._bounds = bounds if bounds is not None else Bounds()
        self._conn: Any = None
        self._bound: LoopBound | None = None  # the watch on _conn's calls
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Task[None] | None = None
        self._busy = False
        self._ready = False  # an insert through the store has succeeded

    @property
    def connected(self) -> bool:
        """Whether inserts from the loop have their own connection now."""
        return self._conn is not None and not self._conn.closed

    def stored(self) -> None:
        """An insert through the store succeeded: open the connection if there is none."""
        self._ready = True
        self._open_soon()

    def _open_soon(self) -> None:
        if self._opening is not None and not self._opening.done():
            return
        loop = asyncio.get_running_loop()
        if self._conn is None or self._conn.closed or self._loop is not loop:
            self._opening = loop.create_task(self._open(loop))

    async def _open(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            conn = await self._connect()
        except Exception:  # the store keeps inserting; the next insert through it retries
            log.debug("opening the insert connection failed", exc_info=True)
            return
        self._conn, self._loop = conn, loop
        self._bound = LoopBound(conn, self._bounds.call_timeout_s, "inserting jobs")

    async def run(self, insert: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> T | None:
        """``insert``'s answer on the loop's connection, or ``None`` when it is not to be had
        now (the insert then goes through the store), ``insert`` not called."""
        if self._busy or not self._ready:
            return None
        conn, bound = self._conn, self._bound
        if (
            conn is None
            or bound is None
            or conn.closed
            or self._loop is not asyncio.get_running_loop()
        ):
            self._open_soon()
            return None
        self._busy = True
        try:
            with bound.call():
                return await insert(conn)
        except BaseException:
            if conn.broken or conn.info.transaction_status != TransactionStatus.IDLE:
                self._conn = self._bound = None
                bound.cancel()
                with contextlib.suppress(Exception):
                    await conn.close()
            raise
        finally:
            self._busy = False

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        conninfo, kwargs = self._pool.conninfo, self._pool.kwargs
        info = conninfo() if callable(conninfo) else (conninfo or "")
        given = dict((kwargs() if callable(kwargs) else kwargs) or {})
        options = connect_options(info, given, self._bounds)
        options["autocommit"] = True
        with translate_errors("connecting for inserts"):
            return await psycopg.AsyncConnection.connect(info, **options)

    async def close(self) -> None:
        opening, self._opening = self._opening, None
        if opening is not None and not opening.done():
            opening.cancel()
            await asyncio.gather(opening, return_exceptions=True)
        conn, self._conn = self._conn, None
        bound, self._bound = self._bound, None
        if conn is not None and self._loop is asyncio.get_running_loop():
            if bound is not None:
                bound.cancel()
            await conn.close()


class LoopBound:
    """``Watchdog.watch`` for the calls awaited one after another on one connection from the
    running event loop (``LoopInserts``): a timer on the loop abandons the connection of a
    call that outlives ``bound_s`` (no task cancellation: psycopg would then try to cancel
    the query over the silent network and wait for it).

    One timer serves the whole run of calls. A timer a call, cancelled when the call ends,
    stays in the loop's heap until the loop sweeps it, and every insert paid to push it there
    and to order it among the others. This one, when it fires, abandons a call begun
    ``bound_s`` ago, or sets itself for the end of the bound of the call in progress, or lets
    the next call set it."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], bound_s: float, action: str) -> None:
        self._conn = conn
        self._bound_s = bound_s
        self._action = action
        self._started_at: float | None = None  # the loop time the call in progress began
        self._timer: Any = None
        self._fired = False

    @contextmanager
    def call(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        self._started_at = started_at = loop.time()
        if self._timer is None:
            self._timer = loop.call_at(started_at + self._bound_s, self._check, loop)
        try:
            yield
        except Exception as exc:
            if self._fired:
                raise DatabaseError(
                    f"{self._action} failed: no answer from the database within"
                    f" {self._bound_s:g}s (call_timeout_s); the connection was abandoned"
                ) from exc
            raise
        finally:
            self._started_at = None

    def _check(self, loop: Any) -> None:
        self._timer = None
        started_at = self._started_at
        if started_at is None:  # idle: the next call sets the timer
            return
        deadline = started_at + self._bound_s
        if loop.time() < deadline:
            self._timer = loop.call_at(deadline, self._check, loop)
            return
        self._fired = True
        abandon(self._conn)

    def cancel(self) -> None:
        """Stop watching: the connection is being closed."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
