"""PostgreSQL passes the same behavioural contract as every other ``ClaimStore``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.ports import ClaimStore
from awa.testing.contract import ClaimStoreContract, Plant
from tests.planting import plant_in_postgres


class TestPostgresContract(ClaimStoreContract):
    @pytest.fixture
    def store(  # type: ignore[override]
        self, make_store: Callable[..., PostgresStore], clock: ManualClock
    ) -> ClaimStore:
        return make_store(clock)

    @pytest.fixture
    def plant_unreadable(self, pg_pool: ConnectionPool[Any]) -> Plant:
        return functools.partial(plant_in_postgres, pg_pool)
