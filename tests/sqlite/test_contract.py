"""SQLite passes the same behavioural contract as every other ``ClaimStore``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import SqliteStore
from awa.ports import ClaimStore
from awa.testing.contract import ClaimStoreContract


class TestSqliteContract(ClaimStoreContract):
    @pytest.fixture
    def store(  # type: ignore[override]
        self, make_store: Callable[..., SqliteStore], clock: ManualClock
    ) -> ClaimStore:
        return make_store(clock)
