"""PostgreSQL passes the same behavioural contract as every other ``ClaimStore``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.ports import ClaimStore
from awa.testing.contract import ClaimStoreContract


class TestPostgresContract(ClaimStoreContract):
    @pytest.fixture
    def store(  # type: ignore[override]
        self, make_store: Callable[..., PostgresStore], clock: ManualClock
    ) -> ClaimStore:
        return make_store(clock)
