"""Transactional enqueue on whatever connection the caller holds: psycopg 3 (sync and async),
SQLAlchemy 2 (``Connection``, ``Session`` and their asyncio forms), Django
(``django.db.connection``) and asyncpg.

Each kind is recognised by the module its class comes from, so no optional driver is imported
unless the caller's object already comes from it. The insert goes through that connection's
own API, so it joins the transaction the caller (or their framework) opened, and commits or
rolls back with it: nothing here begins, commits or rolls back anything. One statement serves
every driver (``insert_jobs_portable.sql``): text in, text out, read by awa rather than by the
driver's type loaders, which an application (Django, a custom asyncpg codec) may have changed.

Bad input is refused before any SQL runs, so a refusal never aborts the caller's transaction.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import attrs

from awa.adapters.postgres._errors import MIGRATE_HINT
from awa.adapters.postgres._rows import job_from_json, portable_insert_params
from awa.adapters.postgres._sql import SQL
from awa.domain import DatabaseError, Job, NewJob, SchemaNotMigrated, ValidationError
from awa.ports.checks import check_new_jobs

__all__ = ["CallerConnection", "caller_connection", "insert_on", "insert_on_async"]

_STATEMENT = SQL["insert_jobs_portable"]
# what PostgreSQL says when the awa schema, a table or a column is missing
_MISSING_SCHEMA = {"42P01", "3F000", "42703"}
_KINDS = (
    "a psycopg Connection or AsyncConnection, a SQLAlchemy Connection, Session,"
    " AsyncConnection or AsyncSession, a Django connection or an asyncpg Connection"
)


@attrs.frozen
class CallerConnection:
    """A recognised connection: how to run the insert on it. ``is_async``: ``run`` returns
    an awaitable, to be awaited on the caller's event loop."""

    name: str
    is_async: bool
    run: Callable[[dict[str, Any]], Any]


# -- each driver: run the statement, return the first column of every row ------------------------


def _psycopg(conn: Any) -> CallerConnection | None:
    import psycopg
    from psycopg.rows import tuple_row

    def run(params: dict[str, Any]) -> list[str]:
        with conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(_STATEMENT, params)
            return [row[0] for row in cur.fetchall()]

    async def run_async(params: dict[str, Any]) -> list[str]:
        async with conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(_STATEMENT, params)
            return [row[0] for row in await cur.fetchall()]

    if isinstance(conn, psycopg.AsyncConnection):
        return CallerConnection("psycopg AsyncConnection", True, run_async)
    if isinstance(conn, psycopg.Connection):
        return CallerConnection("psycopg Connection", False, run)
    return None


def _sqlalchemy(conn: Any) -> CallerConnection | None:
    import sqlalchemy
    from sqlalchemy.orm import Session, scoped_session

    asyncio_forms = sys.modules.get("sqlalchemy.ext.asyncio")
    if isinstance(conn, scoped_session) or (
        asyncio_forms is not None and isinstance(conn, asyncio_forms.async_scoped_session)
    ):
        conn = conn()  # the session the scope holds now (Flask-SQLAlchemy's db.session)

    statement = sqlalchemy.text(_STATEMENT.replace("%(jobs)s", ":jobs").replace("%(now)s", ":now"))

    def run(params: dict[str, Any]) -> list[str]:
        return [row[0] for row in conn.execute(statement, params)]

    async def run_async(params: dict[str, Any]) -> list[str]:
        return [row[0] for row in await conn.execute(statement, params)]

    if asyncio_forms is not None and isinstance(conn, asyncio_forms.AsyncConnection):
        _check_dialect(conn.dialect.name, "SQLAlchemy AsyncConnection")
        return CallerConnection("SQLAlchemy AsyncConnection", True, run_async)
    if asyncio_forms is not None and isinstance(conn, asyncio_forms.AsyncSession):
        _check_dialect(conn.get_bind().dialect.name, "SQLAlchemy AsyncSession")
        return CallerConnection("SQLAlchemy AsyncSession", True, run_async)
    if isinstance(conn, sqlalchemy.Connection):
        _check_dialect(conn.dialect.name, "SQLAlchemy Connection")
        return CallerConnection("SQLAlchemy Connection", False, run)
    if isinstance(conn, Session):
        _check_dialect(conn.get_bind().dialect.name, "SQLAlchemy Session")
        return CallerConnection("SQLAlchemy Session", False, run)
    return None


def _django(conn: Any) -> CallerConnection | None:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.utils.connection import ConnectionProxy

    if not isinstance(conn, (BaseDatabaseWrapper, ConnectionProxy)):
        return None
    _check_dialect(conn.vendor, "Django connection")

    def run(params: dict[str, Any]) -> list[str]:
        with conn.cursor() as cur:
            cur.execute(_STATEMENT, params)
            return [row[0] for row in cur.fetchall()]

    return CallerConnection("Django connection", False, run)


def _asyncpg(conn: Any) -> CallerConnection | None:
    import asyncpg

    if not isinstance(conn, asyncpg.Connection):  # a pool's connection proxy is one too
        return None
    statement = _STATEMENT.replace("%(jobs)s", "$1").replace("%(now)s", "$2")

    async def run(params: dict[str, Any]) -> list[str]:
        rows = await conn.fetch(statement, params["jobs"], params["now"])
        return [row[0] for row in rows]

    return CallerConnection("asyncpg Connection", True, run)


_DRIVERS: dict[str, Callable[[Any], CallerConnection | None]] = {
    "psycopg": _psycopg,
    "sqlalchemy": _sqlalchemy,
    "django": _django,
    "asyncpg": _asyncpg,
}


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


# -- the insert ----------------------------------------------------------------------------------


def _params(jobs: Sequence[NewJob], now: datetime | None) -> dict[str, Any]:
    return portable_insert_params(check_new_jobs(jobs), now)


def insert_on(conn: Any, jobs: Sequence[NewJob], *, now: datetime | None = None) -> list[Job]:
    """Insert ``jobs`` in ``conn``'s current transaction (a sync connection); ``now`` stands
    in for the database clock (tests)."""
    caller = caller_connection(conn)
    if caller.is_async:
        raise ValidationError(
            f"conn is a {caller.name}, which is awaited: use awa.AsyncClient to insert on it"
        )
    params = _params(jobs, now)
    if not jobs:
        return []
    with _translated(caller):
        rows = caller.run(params)
    return [job_from_json(row) for row in rows]


async def insert_on_async(
    conn: Any, jobs: Sequence[NewJob], *, now: datetime | None = None
) -> list[Job]:
    """``insert_on`` from an event loop: an asyncio connection is awaited; a sync one (a
    Django connection, a SQLAlchemy ``Session``) is used right here, on the caller's thread,
    which is where such connections belong."""
    caller = caller_connection(conn)
    params = _params(jobs, now)
    if not jobs:
        return []
    with _translated(caller):
        rows = await caller.run(params) if caller.is_async else caller.run(params)
    return [job_from_json(row) for row in rows]


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
