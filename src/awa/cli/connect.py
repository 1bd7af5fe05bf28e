"""Where the CLI's database comes from, and the store it opens there.

A ``sqlite:`` URL opens a ``SqliteStore`` on an existing file (only ``awa migrate`` creates
one, and only it migrates). Any other URL opens the PostgreSQL adapter's own
``PostgresStore``, so a command gets the bounded connections every awa process gets (connect
timeout, keepalives, statement timeout, UTC): an unreachable server is a one-line
``DatabaseError`` naming host and port on the store's first call, and no error shows a
password (``awa.redaction``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from awa.domain import DatabaseError

if TYPE_CHECKING:
    from awa.adapters.postgres import PostgresStore
    from awa.adapters.sqlite import SqliteStore

__all__ = ["POOL_SIZE", "URL_ENV_VARS", "database_url", "open_store"]

#: the environment variables read, in order, when ``--database-url`` is not given
URL_ENV_VARS = ("AWA_DATABASE_URL", "DATABASE_URL")
#: connections a command's store may hold (``awa callbacks serve`` has ``--pool-size``)
POOL_SIZE = 2


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


def _keep_pool_log_off_stderr() -> None:
    pool_log = logging.getLogger("psycopg.pool")
    if not any(isinstance(h, logging.NullHandler) for h in pool_log.handlers):
        pool_log.addHandler(logging.NullHandler())


@contextmanager
def open_store(
    url: str, *, pool_size: int = POOL_SIZE, check_now: bool = False, migrating: bool = False
) -> Iterator[PostgresStore | SqliteStore]:
    """A ``PostgresStore`` on ``url`` (a ``SqliteStore`` on a ``sqlite:`` URL, which
    ``migrating`` may create), closed on leaving.

    Its first call names an unreachable server; the pool, meanwhile connecting in the
    background, would report the same failure again as a multi-line log record on stderr, so
    its records are not printed by logging's last resort (a handler you configure still gets
    them). ``check_now`` proves the server answers before the pool starts, for what uses the
    pool without that first call: ``migrate`` and the HTTP receiver."""
    if url[:7].lower() == "sqlite:":
        from awa.adapters.sqlite import SqliteStore, sqlite_path

        with SqliteStore(sqlite_path(url), migrate=False, create=migrating) as sqlite_store:
            yield sqlite_store
        return
    from awa.adapters.postgres import PostgresStore
    from awa.adapters.postgres.connections import Bounds, connector

    try:
        if check_now:
            connector(url, {}, Bounds())().close()
        else:
            _keep_pool_log_off_stderr()
        store = PostgresStore(url, pool_size=pool_size)
    except DatabaseError as exc:
        message = str(exc)
        if not message.startswith("cannot connect"):  # a URL the driver cannot read
            message = f"cannot connect to PostgreSQL: {message}"
        raise DatabaseError(message) from None  # the driver's error may quote the password
    with store:
        yield store
