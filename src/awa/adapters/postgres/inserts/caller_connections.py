"""Transactional enqueue on whatever connection the caller holds: psycopg 3 (sync and async),
SQLAlchemy 2 (``Connection``, ``Session`` and their asyncio forms), Django
(``django.db.connection``) and asyncpg.

Each kind is recognised by the module its class comes from, so no optional driver is imported
unless the caller's object already comes from it. The insert goes through that connection's
own API, so it joins the transaction the caller (or their framework) opened, and commits or
rolls back with it: nothing here begins, commits or rolls back anything. One statement serves
every driver (``insert_jobs_portable.sql``): text in, text out, read by awa rather than by the
driver's type loaders, which an application (Django, a custom asyncpg codec) may have changed.

Each recognised connection says how to run the statement on it and how to make a savepoint
there; the insert itself is ``on_caller_connection.py``'s.
"""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import Any

import attrs

from awa.adapters.postgres._sql import SQL
from awa.domain import ValidationError

__all__ = ["CallerConnection", "Row", "caller_connection"]

_STATEMENT = SQL["insert_jobs_portable"]
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
_SAVEPOINT = "awa_insert"
Row = tuple[Any, Any, Any]  # blocked_ord, repeat_of, the job as JSON text
_KINDS = (
    "a psycopg Connection or AsyncConnection, a SQLAlchemy Connection, Session,"
    " AsyncConnection or AsyncSession, a Django connection or an asyncpg Connection"
)


@attrs.frozen
class CallerConnection:
    """A recognised connection: how to run the insert on it. ``is_async``: ``run`` returns
    an awaitable, to be awaited on the caller's event loop, and ``savepoint`` an async
    context manager. ``savepoint``: a block that undoes only itself when it fails, inside
    the caller's transaction (or its own transaction on a connection in autocommit)."""

    name: str
    is_async: bool
    run: Callable[[dict[str, Any]], Any]
    savepoint: Callable[[], Any]


# -- each driver: run the statement, return the first column of every row ------------------------


def _psycopg(conn: Any) -> CallerConnection | None:
    import psycopg
    from psycopg.pq import TransactionStatus
    from psycopg.rows import tuple_row

    def run(params: dict[str, Any]) -> list[Row]:
        with conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(_STATEMENT, params)
            return [row[:3] for row in cur.fetchall()]

    async def run_async(params: dict[str, Any]) -> list[Row]:
        async with conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(_STATEMENT, params)
            return [row[:3] for row in await cur.fetchall()]

    def own_transaction() -> bool:
        """Whether the statement is a transaction of its own (autocommit, none open): it
        needs no savepoint. Otherwise psycopg has begun, or begins, the caller's."""
        idle = conn.info.transaction_status == TransactionStatus.IDLE
        return bool(conn.autocommit) and idle

    @contextmanager
    def savepoint() -> Iterator[None]:
        if own_transaction():
            yield
            return
        conn.execute(f"SAVEPOINT {_SAVEPOINT}")
        try:
            yield
        except BaseException:
            conn.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
            raise
        finally:
            conn.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")

    @asynccontextmanager
    async def savepoint_async() -> AsyncIterator[None]:
        if own_transaction():
            yield
            return
        await conn.execute(f"SAVEPOINT {_SAVEPOINT}")
        try:
            yield
        except BaseException:
            await conn.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
            raise
        finally:
            await conn.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")

    if isinstance(conn, psycopg.AsyncConnection):
        return CallerConnection("psycopg AsyncConnection", True, run_async, savepoint_async)
    if isinstance(conn, psycopg.Connection):
        return CallerConnection("psycopg Connection", False, run, savepoint)
    return None


def _sqlalchemy(conn: Any) -> CallerConnection | None:
    import sqlalchemy
    from sqlalchemy.orm import Session, scoped_session

    asyncio_forms = sys.modules.get("sqlalchemy.ext.asyncio")
    if isinstance(conn, scoped_session) or (
        asyncio_forms is not None and isinstance(conn, asyncio_forms.async_scoped_session)
    ):
        conn = conn()  # the session the scope holds now (Flask-SQLAlchemy's db.session)

    statement = sqlalchemy.text(_PLACEHOLDER.sub(r":\1", _STATEMENT))

    def run(params: dict[str, Any]) -> list[Row]:
        return [tuple(row[:3]) for row in conn.execute(statement, params)]

    async def run_async(params: dict[str, Any]) -> list[Row]:
        return [tuple(row[:3]) for row in await conn.execute(statement, params)]

    # SQLAlchemy's own savepoint: it knows the transaction it began (autobegin) or was given
    if asyncio_forms is not None and isinstance(conn, asyncio_forms.AsyncConnection):
        _check_dialect(conn.dialect.name, "SQLAlchemy AsyncConnection")
        return CallerConnection("SQLAlchemy AsyncConnection", True, run_async, conn.begin_nested)
    if asyncio_forms is not None and isinstance(conn, asyncio_forms.AsyncSession):
        _check_dialect(conn.get_bind().dialect.name, "SQLAlchemy AsyncSession")
        return CallerConnection("SQLAlchemy AsyncSession", True, run_async, conn.begin_nested)
    if isinstance(conn, sqlalchemy.Connection):
        _check_dialect(conn.dialect.name, "SQLAlchemy Connection")
        return CallerConnection("SQLAlchemy Connection", False, run, conn.begin_nested)
    if isinstance(conn, Session):
        _check_dialect(conn.get_bind().dialect.name, "SQLAlchemy Session")
        return CallerConnection("SQLAlchemy Session", False, run, conn.begin_nested)
    return None


def _django(conn: Any) -> CallerConnection | None:
    from django.db import transaction
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.utils.connection import ConnectionProxy

    if not isinstance(conn, (BaseDatabaseWrapper, ConnectionProxy)):
        return None
    _check_dialect(conn.vendor, "Django connection")

    def run(params: dict[str, Any]) -> list[Row]:
        with conn.cursor() as cur:
            cur.execute(_STATEMENT, params)
            return [tuple(row[:3]) for row in cur.fetchall()]

    def savepoint() -> AbstractContextManager[Any]:
        # inside atomic(): a savepoint; in autocommit: a transaction of the statement's own
        atomic: AbstractContextManager[Any] = transaction.atomic(using=conn.alias)
        return atomic

    return CallerConnection("Django connection", False, run, savepoint)


def _asyncpg(conn: Any) -> CallerConnection | None:
    import asyncpg

    if not isinstance(conn, asyncpg.Connection):  # a pool's connection proxy is one too
        return None
    statement, order = _numbered(_STATEMENT)

    async def run(params: dict[str, Any]) -> list[Row]:
        rows = await conn.fetch(statement, *(params[name] for name in order))
        return [(row[0], row[1], row[2]) for row in rows]

    # nested in the caller's transaction: a savepoint; outside one: a transaction of its own
    return CallerConnection("asyncpg Connection", True, run, conn.transaction)


_DRIVERS: dict[str, Callable[[Any], CallerConnection | None]] = {
    "psycopg": _psycopg,
    "sqlalchemy": _sqlalchemy,
    "django": _django,
    "asyncpg": _asyncpg,
}


def _numbered(statement: str) -> tuple[str, list[str]]:
    """``statement`` with ``$1``, ``$2``... for its named placeholders, and the names in
    that order (asyncpg binds by position)."""
    order: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in order:
            order.append(match.group(1))
        return f"${order.index(match.group(1)) + 1}"

    return _PLACEHOLDER.sub(number, statement), order


def _check_dialect(name: str, what: str) -> None:
    if name != "postgresql":
        raise ValidationError(f"conn is a {what} to {name}, not PostgreSQL")


def caller_connection(conn: Any) -> CallerConnection:
    """Recognise ``conn``; ``ValidationError`` (naming its type) for anything else."""
    recognised = None
    # by the packages its class and bases come from: a subclass of a driver's class (an
    # application's own Session) is that driver's too
    for package in dict.fromkeys(cls.__module__.partition(".")[0] for cls in type(conn).__mro__):
        driver = _DRIVERS.get(package)
        recognised = driver(conn) if driver is not None else None
        if recognised is not None:
            break
    if recognised is None:
        raise ValidationError(f"conn must be {_KINDS}; got {_type_name(conn)}")
    return recognised


def _type_name(value: object) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
