"""A real PostgreSQL for every test in this folder.

The server and database fixtures live in ``tests/pg_fixtures.py``, a plugin the root
``tests/conftest.py`` registers for every folder (the server, where it comes from, CI
behaviour and isolation are described there). This file adds the store fixtures this folder
uses and marks its tests ``postgres``.

The plugin's names stay importable from here (``from tests.postgres.conftest import
pg_server_url``) for code written before the move. They are resolved lazily, not bound at
import, so pytest does not register the same fixtures a second time for this folder (a
second registration of a session fixture would start a second server).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

import tests.pg_fixtures
from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from tests.pg_fixtures import truncate


def __getattr__(name: str) -> Any:
    if name in tests.pg_fixtures.__all__:
        return getattr(tests.pg_fixtures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.postgres)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def make_store(pg_pool: ConnectionPool[Any]) -> Callable[..., PostgresStore]:
    """Empties the tables, then builds stores on the shared pool (cheap: no new connections)."""
    truncate(pg_pool)

    def make(clock: Any = None, rng: random.Random | None = None) -> PostgresStore:
        return PostgresStore(pg_pool, clock=clock, rng=rng if rng is not None else random.Random(0))

    return make


@pytest.fixture
def store(make_store: Callable[..., PostgresStore], clock: ManualClock) -> PostgresStore:
    """A store on empty tables, with a manual clock and a seeded jitter source."""
    return make_store(clock)
