"""pytest fixtures for testing handlers, registered when awa is installed (the ``pytest11``
entry point): ``awa_clock``, a ``ManualClock``, and ``awa_client``, a
``awa.testing.TestClient`` on that clock.

``awa_client`` runs on a fresh memory store per test. Given a PostgreSQL URL
(``--awa-url URL`` or ``AWA_TEST_URL``) it runs on that database instead, migrated, with awa's
tables emptied before each test: give it a database kept for tests.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from awa.adapters.memory import ManualClock
from awa.testing.client import TestClient

__all__ = ["awa_client", "awa_clock"]

URL_VARIABLE = "AWA_TEST_URL"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("awa").addoption(
        "--awa-url",
        default=None,
        help=(
            "run the awa_client fixture on this PostgreSQL database (awa's tables are emptied"
            f" before each test) instead of the memory store; also ${URL_VARIABLE}"
        ),
    )


@pytest.fixture
def awa_clock() -> ManualClock:
    """A clock that moves only when the test moves it."""
    return ManualClock()


@pytest.fixture
def awa_client(awa_clock: ManualClock, pytestconfig: pytest.Config) -> Iterator[TestClient]:
    """A ``TestClient`` on ``awa_clock``: the memory store, or the ``--awa-url`` database."""
    url = pytestconfig.getoption("awa_url") or os.environ.get(URL_VARIABLE) or None
    with TestClient(url, clock=awa_clock) as client:
        if url is not None:
            _empty(client)
        yield client


def _empty(client: TestClient) -> None:
    """Every table of the awa schema but the migration ledger, emptied (ids restart at 1)."""
    from psycopg import sql

    from awa.adapters.postgres import PostgresStore

    store = client.store
    assert isinstance(store, PostgresStore)
    with store.pool.connection() as conn:
        names = conn.execute(
            "SELECT tablename FROM pg_tables"
            " WHERE schemaname = 'awa' AND tablename <> 'schema_version' ORDER BY tablename"
        ).fetchall()
        tables = sql.SQL(", ").join(sql.Identifier("awa", name) for [name] in names)
        conn.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY").format(tables))
