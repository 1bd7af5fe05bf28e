"""Where the CLI's database comes from, and a store that fails fast when it is unreachable.

Its errors name the server (host, port, database) and never the password: a driver's message
is passed through ``redact``, which also catches the pieces of a malformed URL libpq quotes."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from awa.domain import DatabaseError
from awa.redaction import redact

if TYPE_CHECKING:
    from awa.adapters.postgres import PostgresStore

__all__ = ["CONNECT_TIMEOUT_S", "URL_ENV_VARS", "database_url", "open_store"]

#: the environment variables read, in order, when ``--database-url`` is not given
URL_ENV_VARS = ("AWA_DATABASE_URL", "DATABASE_URL")
#: how long to wait for the server to answer before giving up
CONNECT_TIMEOUT_S = 10


def database_url(given: str | None, environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    if given:
        return given
    for name in URL_ENV_VARS:
        if env.get(name):
            return env[name]
    raise DatabaseError(
        "no database given: pass --database-url or set AWA_DATABASE_URL or DATABASE_URL"
    )


def _where(url: str) -> str:
    """Host, port and database of ``url`` for messages, never its password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(url)
    except Exception:  # an unparseable URL: say nothing about it beyond that
        return "the given database URL"
    host = params.get("host") or "localhost"
    port = params.get("port") or "5432"
    return f"{host}:{port}/{params.get('dbname') or params.get('user') or ''}"


@contextmanager
def open_store(url: str, *, pool_size: int = 2) -> Iterator[PostgresStore]:
    """A ``PostgresStore`` on a small pool, after one connection proved the server answers.

    The probe turns "connection refused" into an immediate ``DatabaseError`` instead of a pool
    that retries quietly until its timeout."""
    import psycopg
    from psycopg_pool import ConnectionPool

    from awa.adapters.postgres import PostgresStore

    where = _where(url)
    try:
        probe = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
    except psycopg.Error as exc:
        # from None: the driver's error may quote the password, and a chained traceback would
        # show it
        raise DatabaseError(
            f"cannot connect to PostgreSQL at {where}: {redact(str(exc), [url])}"
        ) from None
    probe.close()
    pool: ConnectionPool[psycopg.Connection[tuple[object, ...]]] = ConnectionPool(
        url,
        min_size=1,
        max_size=pool_size,
        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
        open=False,
        name="awa-cli",
        timeout=CONNECT_TIMEOUT_S,
    )
    try:
        pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
    except Exception as exc:  # psycopg_pool.PoolTimeout and friends
        raise DatabaseError(
            f"cannot connect to PostgreSQL at {where}: {redact(str(exc), [url])}"
        ) from None
    try:
        with PostgresStore(pool) as store:
            yield store
    finally:
        pool.close()
